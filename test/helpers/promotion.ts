import v8 from 'node:v8';
import { evaluateBodies } from '../../bench/mix.js';
import { evaluateBody } from '../../src/evaluate/body.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { answerOf } from '../../src/evaluate/runner.js';
import { AwaitingReplies } from '../../src/lib/awaitingReplies.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { prepareEvent } from '../../src/store/eventWrites.js';
import { REPO_ROOT } from './tps.js';

/**
 * Run with --expose-gc (test/unit/promotion.test.ts), in a process of its own so that nothing else
 * allocates: prints how many MB the old generation grew by while objects that were dead at every
 * scavenge came and went, so what grew was promoted dead, for a major GC to collect.
 * - `map` or `table`: 4,000 requests of ~8 KB each entered and left a waiting table whose storage
 *   was already old: a Map, or AwaitingReplies.
 * - `evaluations`: 10,000 evaluations of the benchmark's mix, each answered and its event
 *   prepared as the evaluation thread does, one after the other, after as many to warm up.
 */
declare const gc: (options?: { type: 'major' | 'minor' }) => void;
const oldSpaceBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;

interface Table {
  add(id: number, waiter: object): void;
  take(id: number): unknown;
}

function throughTable(table: Table): number {
  gc();
  // The table's storage reaches the old generation, as after any busy spell.
  table.add(-1, {});
  gc({ type: 'minor' });
  gc({ type: 'minor' });
  table.take(-1);
  const before = oldSpaceBytes();
  let id = 0;
  for (let round = 0; round < 200; round++) {
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(id);
      table.add(id++, { request: new Array(1000).fill(round) });
    }
    for (const each of ids) table.take(each);
    if (round % 10 === 9) gc({ type: 'minor' });
  }
  gc({ type: 'minor' });
  gc({ type: 'minor' });
  return oldSpaceBytes() - before;
}

async function throughEvaluations(n: number): Promise<number> {
  // Events dropped, not kept: kept, they would be the old generation's growth this measures.
  const { evaluator } = new OfflineEvaluator({ catalog: loadCatalog(REPO_ROOT), record: () => {} });
  const bodies = evaluateBodies(0);
  const evaluate = async (i: number) => {
    const { response, event } = await evaluateBody(evaluator, 'production', bodies[i % bodies.length]!);
    return answerOf(response).json.length + prepareEvent(event).valuesJson.length;
  };
  for (let i = 0; i < n; i++) await evaluate(i);
  gc();
  const before = oldSpaceBytes();
  for (let i = n; i < 2 * n; i++) await evaluate(i);
  return oldSpaceBytes() - before;
}

const kind = process.argv[2];
const bytes = kind === 'evaluations' ? await throughEvaluations(10_000) : throughTable(kind === 'map' ? mapTable() : new AwaitingReplies<object>());
process.stdout.write(`${JSON.stringify({ promotedMb: bytes / 1e6 })}\n`);

function mapTable(): Table {
  const map = new Map<number, object>();
  return { add: (id, w) => map.set(id, w), take: (id) => map.delete(id) };
}
