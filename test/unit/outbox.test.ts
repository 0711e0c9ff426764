import test from 'ava';
import { Outbox } from '../../src/evaluate/outbox.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('replies of one turn leave together once the turn ends, and a lone reply alone', async (t) => {
  const sent: number[][] = [];
  const outbox = new Outbox<number>((group) => sent.push(group), 8);
  for (let i = 0; i < 3; i++) outbox.push(i);
  t.deepEqual(sent, [], 'nothing leaves before the turn ends');
  await turn();
  t.deepEqual(sent, [[0, 1, 2]]);
  outbox.push(3);
  await turn();
  t.deepEqual(sent, [[0, 1, 2], [3]]);
});

test('a burst is cut into groups of at most max, the first leaving while the burst is still being evaluated', async (t) => {
  const sent: number[][] = [];
  const outbox = new Outbox<number>((group) => sent.push(group), 8);
  for (let i = 0; i < 20; i++) {
    outbox.push(i);
    if (i === 7) t.deepEqual(sent, [[0, 1, 2, 3, 4, 5, 6, 7]], 'the eighth reply sends the group at once');
  }
  t.deepEqual(
    sent.map((g) => g.length),
    [8, 8],
  );
  await turn();
  t.deepEqual(
    sent.map((g) => g.length),
    [8, 8, 4],
  );
  t.deepEqual(sent.flat(), Array.from({ length: 20 }, (_, i) => i), 'every reply leaves once, in order');
  await turn();
  t.is(sent.length, 3, 'an emptied outbox sends no empty group');
});
