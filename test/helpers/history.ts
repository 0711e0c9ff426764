import type { ExecutionContext } from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { MemoryChallengeStore } from '../../src/state/challenges.js';
import { MemoryVelocityCounter, type VelocityCounter } from '../../src/state/counters.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { PolicyVersionStore } from '../../src/store/policyVersionStore.js';
import { openFreshStore } from './config.js';
import { runTps } from './cli.js';

/** One scripted evaluation: a request at its own time (epoch ms). */
export interface HistoryStep {
  at: number;
  req: EvaluateRequest;
}

/**
 * The events the server's Evaluator records for these steps under `dir`, state kept between them as
 * a server keeps it (its own counter and challenge store unless given), telemetryIds h-1, h-2, …
 */
export async function decideLive(dir: string, steps: HistoryStep[], counters: VelocityCounter = new MemoryVelocityCounter()): Promise<EventRecord[]> {
  const events: EventRecord[] = [];
  let now = 0;
  const offline = new OfflineEvaluator({
    catalog: loadCatalog(dir),
    counters,
    challenges: new MemoryChallengeStore(),
    now: () => now,
    record: (e) => void events.push(e),
  });
  for (const step of steps) {
    now = step.at;
    await offline.evaluate(step.req, 'test');
  }
  return events.map((e, i) => ({ ...e, telemetryId: `h-${i + 1}` }));
}

/** A fresh SQLite store holding `events` and the policy versions of `dir`, as the server keeps them; dropped after the test. */
export async function storeHolding(t: ExecutionContext, dir: string, events: EventRecord[]) {
  const store = await openFreshStore('sqlite');
  t.teardown(store.close);
  await new PolicyVersionStore(store.db.knex).remember(loadCatalog(dir).policies.values());
  await new KnexEventStore(store.db).insertBatch(events);
  return store;
}

/** `tps ARGS` as a user runs it (bin/tps.js, a process of its own) against the store at `url`. */
export const tpsOn = (url: string, args: string[]) => runTps(args, { env: { DATABASE_URL: url } });
