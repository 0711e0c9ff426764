import test from 'ava';
import { AwaitingReplies } from '../../src/lib/awaitingReplies.js';

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
