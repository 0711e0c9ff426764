import test from 'ava';
import knexFactory, { type Knex } from 'knex';
import { openDatabase } from '../../src/store/db.js';
import { migrationSource } from '../../src/store/migrations.js';
import { startScript, type ScriptProcess } from '../helpers/script.js';
import { freshDatabase, type StoreKind } from '../helpers/tps.js';

// Several processes starting on one store at once (a rolling deploy, `tps` commands beside a
// server) each migrate it: they take turns (src/store/migrationTurn.ts), each in its own process.

const MIGRATOR = 'test/helpers/migrateOnSignal.ts';

/** Migrators started on the store, each ready (its modules loaded) before any is told to go. */
async function readyMigrators(url: string, n: number): Promise<ScriptProcess[]> {
  const all = Array.from({ length: n }, () => startScript(MIGRATOR, { DATABASE_URL: url }));
  await Promise.all(all.map((p) => p.logged(/^ready$/m)));
  return all;
}

const migrateTogether = test.macro(async (t, store: StoreKind) => {
  const database = freshDatabase(store);
  t.teardown(() => database.drop());
  const migrators = await readyMigrators(database.url, 4);
  t.teardown(() => Promise.all(migrators.map((p) => p.stop('SIGKILL'))));
  for (const p of migrators) p.signal('SIGUSR2');
  const ended = await Promise.all(migrators.map((p) => p.exited));
  t.deepEqual(
    ended.map((e, i) => (e.code === 0 ? 0 : `${e.code ?? e.signal}: ${migrators[i]!.stderr}`)),
    migrators.map(() => 0),
  );

  // One lock row, free, and every migration recorded once.
  const db = await openDatabase(database.url, { migrate: false, checkpoint: false });
  try {
    t.deepEqual(await db.knex('knex_migrations_lock').select('is_locked'), [{ is_locked: 0 }]);
    const names = (await db.knex('knex_migrations').select('name')).map((r: { name: string }) => r.name);
    const all = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
    t.deepEqual([...names].sort(), [...all].sort());
  } finally {
    await db.close();
  }
  // And a later start on it migrates nothing and starts.
  await (await openDatabase(database.url, { checkpoint: false })).close();
});

test('four processes migrating a new SQLite store at once all succeed, leaving one lock row', migrateTogether, 'sqlite');
test('four processes migrating a new PostgreSQL schema at once all succeed, leaving one lock row', migrateTogether, 'postgres');

// SQLite's busy handler gives up after the connection's busy_timeout (5 s); another process's
// migration (one rewriting every event of a large store) may hold the write lock far longer.
test('SQLite: a start waits for another process holding the store\'s write lock longer than the busy timeout, then migrates', async (t) => {
  const database = freshDatabase('sqlite');
  t.teardown(() => database.drop());
  await (await openDatabase(database.url, { checkpoint: false })).close();
  const holder: Knex = knexFactory({ client: 'sqlite3', connection: { filename: database.url.slice('sqlite:'.length) }, useNullAsDefault: true, pool: { min: 1, max: 1 } });
  t.teardown(() => holder.destroy());
  // As a migration's transaction holds it: on the pool's one connection, until COMMIT.
  await holder.raw('BEGIN IMMEDIATE');
  const [migrator] = await readyMigrators(database.url, 1);
  t.teardown(() => migrator!.stop('SIGKILL'));
  migrator!.signal('SIGUSR2');
  // Past one busy timeout, it says it waits rather than failing with SQLITE_BUSY.
  const waited = await Promise.race([migrator!.said(/waiting for another process to finish migrating/), migrator!.exited.then((e) => ({ ended: e }))]);
  t.false('ended' in waited, `it ended instead of waiting: ${migrator!.stderr}`);
  await holder.raw('COMMIT');
  t.deepEqual(await migrator!.exited, { code: 0, signal: null }, migrator!.stderr);
});
