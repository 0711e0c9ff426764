import test from 'ava';
import { evaluatesInThread, type Machine } from '../../src/evaluate/placement.js';

const sqlite = (cpus: number, workers = 1): Machine => ({ dialect: 'sqlite', cpus, workers });

test('auto takes the evaluation thread with SQLite only where every process has a core for each of its two threads', (t) => {
  t.true(evaluatesInThread('auto', sqlite(2)));
  t.true(evaluatesInThread('auto', sqlite(64)));
  t.false(evaluatesInThread('auto', sqlite(1)));
  // Two workers with a thread each on two vCPUs: four busy threads on two cores.
  t.false(evaluatesInThread('auto', sqlite(2, 2)));
  t.false(evaluatesInThread('auto', sqlite(3, 2)));
  t.true(evaluatesInThread('auto', sqlite(4, 2)));
  t.false(evaluatesInThread('auto', sqlite(7, 4)));
  t.true(evaluatesInThread('auto', sqlite(8, 4)));
});

test('auto keeps PostgreSQL in the HTTP thread; true and false are taken as set', (t) => {
  t.false(evaluatesInThread('auto', { dialect: 'postgres', cpus: 64, workers: 1 }));
  for (const machine of [sqlite(1), sqlite(2, 2), { dialect: 'postgres' as const, cpus: 8, workers: 1 }]) {
    t.true(evaluatesInThread('true', machine));
    t.false(evaluatesInThread('false', machine));
  }
});
