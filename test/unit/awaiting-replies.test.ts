import test from 'ava';
import { AwaitingReplies } from '../../src/lib/awaitingReplies.js';
import { runScript } from '../helpers/script.js';

test('a waiter is taken once, by its id; takeAll empties the table', (t) => {
  const table = new AwaitingReplies<string>();
  table.add(1, 'one');
  table.add(2, 'two');
  table.add(3, 'three');
  t.is(table.get(2), 'two');
  t.is(table.take(2), 'two');
  t.is(table.take(2), undefined);
  t.is(table.get(2), undefined);
  t.deepEqual(table.takeAll().sort(), ['one', 'three']);
  t.deepEqual(table.takeAll(), []);
  t.is(table.take(1), undefined);
});

/** MB promoted through a `map` or the `table` (test/helpers/promotion.ts), in a process of its own with gc() exposed. */
async function promotedMb(kind: 'map' | 'table'): Promise<number> {
  const run = await runScript('test/helpers/promotion.ts', { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc` }, [kind]);
  if (run.code !== 0) throw new Error(`promotion.ts ${kind} exited with ${run.code}: ${run.stderr}`);
  return (JSON.parse(run.stdout) as { promotedMb: number }).promotedMb;
}

test('requests that came and went are not promoted through the table (unlike a Map)', async (t) => {
  const [mapMb, tableMb] = await Promise.all([promotedMb('map'), promotedMb('table')]);
  // The control: if V8 stops linking a Map's old tables, this says the table's reason is gone.
  t.true(mapMb > 5, `a Map promoted ${mapMb.toFixed(2)} MB`);
  t.true(tableMb < 1, `the table promoted ${tableMb.toFixed(2)} MB`);
});
