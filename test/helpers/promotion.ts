import v8 from 'node:v8';
import { AwaitingReplies } from '../../src/lib/awaitingReplies.js';

/**
 * Run with --expose-gc (test/unit/awaiting-replies.test.ts), in a process of its own so that
 * nothing else allocates: prints how many MB the old generation grew by while 4,000 requests of
 * ~8 KB each entered and left a table (`map` or `table`) whose storage was already old. None is
 * alive at any scavenge, so what grows was promoted dead.
 */
declare const gc: (options?: { type: 'major' | 'minor' }) => void;
const oldSpaceBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size;

interface Table {
  add(id: number, waiter: object): void;
  take(id: number): unknown;
}

const map = new Map<number, object>();
const table: Table = process.argv[2] === 'map' ? { add: (id, w) => map.set(id, w), take: (id) => map.delete(id) } : new AwaitingReplies<object>();

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
process.stdout.write(`${JSON.stringify({ promotedMb: (oldSpaceBytes() - before) / 1e6 })}\n`);
