import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { SqliteSync } from '../config/env.js';
import { migrationSource } from './migrations.js';
import { finalizeStatements } from './sqliteStatements.js';

// bigint columns (seq, timestamps) fit in a double; read them as numbers, not strings.
pg.types.setTypeParser(20, (value) => Number(value));

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  /**
   * For long reads (Decision Logs, stream catch-up, export). SQLite: connections of their own, so
   * a search never queues ahead of a commit on the single writer connection (WAL lets them read
   * while it writes). PostgreSQL: the same pool.
   */
  reader: Knex;
  dialect: Dialect;
  /** Where the data lives, for logs; never contains a password. */
  describe: string;
  close(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = './data/tps.sqlite';

/** Opens the store named by DATABASE_URL (CONTRACT): postgres://… , sqlite:PATH or a plain path. */
export interface OpenOptions {
  migrate?: boolean;
  sqliteSync?: SqliteSync;
  /** Called with the seconds each SQLite checkpoint took (metrics). */
  onCheckpoint?: (seconds: number) => void;
}

export async function openDatabase(url: string | undefined, options: OpenOptions = {}): Promise<Database> {
  const db = /^postgres(ql)?:\/\//.test(url ?? '') ? openPostgres(url!) : openSqlite(sqlitePath(url), options.sqliteSync ?? 'full', options.onCheckpoint);
  try {
    if (db.dialect === 'sqlite') await checkSqliteVersion(db.knex);
    if (options.migrate !== false) await migrate(db);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}

// The event writer unpacks a batch with jsonb_each, new in SQLite 3.51 (the sqlite3 package bundles a
// newer one; a build against an older system library would fail at the first commit instead).
const SQLITE_MIN = [3, 51] as const;

export function sqliteTooOld(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major < SQLITE_MIN[0] || (major === SQLITE_MIN[0] && minor < SQLITE_MIN[1]);
}

async function checkSqliteVersion(knex: Knex): Promise<void> {
  const [{ version }] = (await knex.raw('SELECT sqlite_version() AS version')) as [{ version: string }];
  if (sqliteTooOld(version)) {
    throw new Error(`SQLite ${version} is too old: TPS needs ${SQLITE_MIN.join('.')} or newer (the sqlite3 package's bundled build has it)`);
  }
}

function sqlitePath(url: string | undefined): string {
  if (!url) return DEFAULT_SQLITE_PATH;
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') : url;
}

/** A knex pool over one SQLite file, each connection set up by `pragmas`. */
function sqlitePool(file: string, min: number, max: number, pragmas: string): Knex {
  const knex = knexFactory({
    client: 'sqlite3',
    connection: { filename: file },
    useNullAsDefault: true,
    pool: {
      min,
      max,
      afterCreate: (conn: { exec(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) => {
        conn.exec(pragmas, (err) => done(err, conn));
      },
    },
  });
  // The event writer's prepared statements (sqliteStatements.ts) must go before their connection.
  const client = knex.client as { destroyRawConnection(conn: unknown): Promise<void> };
  const destroy = client.destroyRawConnection.bind(client);
  client.destroyRawConnection = async (conn) => {
    await finalizeStatements(conn as never);
    return destroy(conn);
  };
  return knex;
}

function openSqlite(file: string, sync: SqliteSync, onCheckpoint: OpenOptions['onCheckpoint']): Database {
  const memory = file === ':memory:';
  if (!memory) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // One writer. WAL keeps readers off the writer's back. synchronous=FULL makes each commit survive
  // power loss, and group commit pays that fsync once per batch, not once per event; NORMAL
  // (TPS_SQLITE_SYNC) leaves the fsync to the checkpoints: a commit survives the process being
  // killed, not the machine losing power. SQLite never checkpoints on its own (see checkpointer).
  const pragmas = `PRAGMA journal_mode=WAL; PRAGMA synchronous=${sync.toUpperCase()}; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;`;
  const knex = sqlitePool(file, 1, 1, `${pragmas}${memory ? '' : ' PRAGMA wal_autocheckpoint=0;'}`);
  // Readers for long searches: memory-mapped, so walking an index and fetching its rows costs no syscalls.
  const reader = memory ? knex : sqlitePool(file, 0, 4, 'PRAGMA busy_timeout=5000; PRAGMA query_only=1; PRAGMA mmap_size=1073741824; PRAGMA cache_size=-16384;');
  const checkpoints = memory ? undefined : checkpointer(knex, onCheckpoint);
  return {
    knex,
    reader,
    dialect: 'sqlite',
    describe: `sqlite:${file}`,
    async close() {
      await checkpoints?.stop();
      if (reader !== knex) await reader.destroy();
      await knex.destroy();
    },
  };
}

// How often the WAL is copied back into the database file.
const CHECKPOINT_MS = 100;

/**
 * Checkpoints every CHECKPOINT_MS, on the writer's own connection between two commits. Left to
 * SQLite, every ~1000 pages of WAL one commit would also copy them back and fsync the database:
 * tens of milliseconds during which no evaluation is answered. Run from another connection, a
 * checkpoint races the writer: it never catches up with a writer that never pauses, so the WAL
 * never starts over (it grew past 200 MB in a 10-second benchmark), and the RESTART that forced it
 * stalled the writer in SQLite's busy-wait back-off (1, 2, 5 ms…) several times a second. Queued
 * on the writer's connection, a PASSIVE checkpoint sees no writer: it copies the whole WAL (a few
 * hundred distinct pages) in one to a few milliseconds, and the next commit writes the file from
 * its start again. A reader holding an old snapshot (a long search or export) still keeps the
 * frames after it until it ends; PASSIVE never waits for it.
 */
function checkpointer(writer: Knex, onCheckpoint: OpenOptions['onCheckpoint']): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    // One at a time: a tick that finds the last checkpoint still queued or running skips. One that
    // fails (the database busy or gone) is simply tried again at the next tick. The time counted
    // includes the wait for the commit ahead of it, as the commits queued behind it see it.
    if (running) return;
    const start = performance.now();
    running = writer
      .raw('PRAGMA wal_checkpoint(PASSIVE)')
      .then(() => onCheckpoint?.((performance.now() - start) / 1000), () => undefined)
      .finally(() => (running = undefined));
  }, CHECKPOINT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** A Database over a knex instance that someone else owns and closes (knex seeds are handed only knex). */
export function databaseOf(knex: Knex): Database {
  const sqlite = knex.client.config.client !== 'pg';
  return { knex, reader: knex, dialect: sqlite ? 'sqlite' : 'postgres', describe: sqlite ? 'sqlite' : 'postgres', close: async () => undefined };
}

function openPostgres(url: string): Database {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  const knex = knexFactory({
    client: 'pg',
    connection: parsed.toString(),
    searchPath: schema ? [schema] : undefined,
    pool: { min: 0, max: 10 },
  });
  const safe = `postgres://${parsed.host}${parsed.pathname}${schema ? `?schema=${schema}` : ''}`;
  return { knex, reader: knex, dialect: 'postgres', describe: safe, close: () => knex.destroy() };
}

export async function migrate(db: Database): Promise<void> {
  const schema = db.dialect === 'postgres' ? (db.knex.client.config.searchPath as string[] | undefined)?.[0] : undefined;
  if (schema) await db.knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
  await db.knex.migrate.latest({ migrationSource, schemaName: schema });
}
