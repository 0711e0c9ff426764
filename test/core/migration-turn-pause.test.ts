import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import knexFactory from 'knex';
import { inSqliteTurn } from '../../src/store/migrationTurn.js';

// SQLite may refuse the migration's turn at once, without its busy handler waiting (here: a
// connection with no busy timeout). Asked for again at once, the turn made a busy loop that took a
// CPU for as long as the other process migrated; and `waiting` was told only once, however long.

/** A connection whose busy handler never waits (node-sqlite3's waits 1 s unless told). */
const sqlite = (file: string) =>
  knexFactory({
    client: 'sqlite3',
    connection: { filename: file },
    useNullAsDefault: true,
    pool: { min: 1, max: 1, afterCreate: (conn: { run(sql: string, done: (err: Error | null) => void): void }, done: (err: Error | null) => void) => conn.run('PRAGMA busy_timeout = 0', done) },
  });

test('a migration turn SQLite refuses at once is asked for again after a pause, not in a busy loop, and the wait is told again', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-turn-'));
  const file = path.join(dir, 'tps.sqlite');
  const holder = sqlite(file);
  const contender = sqlite(file);
  t.teardown(async () => {
    await contender.destroy();
    await holder.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // Another process's migration: it holds the file's write lock until released.
  let locked!: () => void;
  let release!: () => void;
  const holding = new Promise<void>((r) => (locked = r));
  const released = new Promise<void>((r) => (release = r));
  const held = holder.transaction(async (trx) => {
    await trx.raw('CREATE TABLE held (x)');
    locked();
    await released;
  });
  await holding;

  let tries = 0;
  contender.on('query', (q: { sql: string }) => void (/application_id/.test(q.sql) && tries++));
  const toldAt: number[] = [];
  let ran = false;
  const remindMs = 300;
  const started = Date.now();
  const turn = inSqliteTurn(contender, () => void toldAt.push(Date.now()), async (trx) => void (ran = (await trx.raw('SELECT 1')) !== undefined), { remindMs });
  // Held until the waiting has been told twice (a poll with a deadline, not a fixed wait).
  const deadline = Date.now() + 15_000;
  while (toldAt.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const elapsed = Date.now() - started;
  const triesWhileHeld = tries;
  release();
  await held;
  await turn;
  t.true(ran, 'the turn came once the lock was released');
  t.true(toldAt.length >= 2, `told ${toldAt.length} time(s) while it waited`);
  // Every try after the first comes after a pause of at least 100 ms (growing): over however long
  // it actually waited, at most 1 + elapsed / 100 tries (a busy loop makes thousands). 90: timers may fire a little early.
  const most = 1 + Math.floor(elapsed / 90);
  t.true(triesWhileHeld <= most, `${triesWhileHeld} tries in ${elapsed} ms; at most ${most} with a pause between tries`);
  // Told again only once remindMs had passed since the last telling.
  for (let k = 1; k < toldAt.length; k++) t.true(toldAt[k]! - toldAt[k - 1]! >= remindMs, `told again after ${toldAt[k]! - toldAt[k - 1]!} ms`);
});
