// knex seed: a demo history of a few thousand decision events (TPS_SEED_EVENTS, default 3000) in
// TPS_ENVIRONMENT, made by real evaluations through the server's Evaluator (src/seed/demo.ts), so
// the Decision Logs, replay and the console have something to show. Rerunning it adds nothing:
// the history is deterministic and its telemetryIds (demo-000001…) are only stored once.
import type { Knex } from 'knex';
import { readSettings } from '../src/config/env.js';
import { loadCatalog } from '../src/policy/catalog.js';
import { DEMO_PREFIX, generateDemoHistory } from '../src/seed/demo.js';
import { databaseOf } from '../src/store/db.js';
import { KnexEventStore } from '../src/store/eventStore.js';

export interface DemoSeedOptions {
  configDir?: string;
  environment?: string;
  count?: number;
  endMs?: number;
  log?: (line: string) => void;
}

export async function run(knex: Knex, options: DemoSeedOptions = {}) {
  const settings = readSettings();
  const environment = options.environment ?? settings.environment;
  const count = options.count ?? Number(process.env.TPS_SEED_EVENTS ?? 3000);
  if (!Number.isInteger(count) || count < 1) throw new Error(`TPS_SEED_EVENTS must be a positive integer, got "${process.env.TPS_SEED_EVENTS}"`);
  const catalog = loadCatalog(options.configDir ?? settings.configDir);
  const store = new KnexEventStore(databaseOf(knex));
  await knex('environments').insert({ name: environment, created_at: Date.now() }).onConflict('name').ignore();

  const taken = new Set<string>(
    (await knex('events').select('telemetry_id').where('environment', environment).andWhere('telemetry_id', 'like', `${DEMO_PREFIX}%`)).map((r: { telemetry_id: string }) => r.telemetry_id),
  );
  let stored = 0;
  const result = await generateDemoHistory({
    catalog,
    environment,
    count,
    endMs: options.endMs,
    async write(events) {
      const fresh = events.filter((e) => !taken.has(e.telemetryId));
      await store.insertBatch(fresh);
      stored += fresh.length;
    },
  });
  const mix = Object.entries(result.byDecision)
    .map(([d, k]) => `${d} ${k}`)
    .join(', ');
  options.log?.(`demo history: ${result.total} events in "${environment}" (${mix}); ${stored} stored, ${result.total - stored} already there`);
  return { ...result, stored };
}

export async function seed(knex: Knex): Promise<void> {
  await run(knex);
}
