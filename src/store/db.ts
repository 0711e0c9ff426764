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
export async function openDatabase(url: string | undefined, options: { migrate?: boolean; sqliteSync?: SqliteSync } = {}): Promise<Database> {
  const db = /^postgres(ql)?:\/\//.test(url ?? '') ? openPostgres(url!) : openSqlite(sqlitePath(url), options.sqliteSync ?? 'full');
  if (options.migrate !== false) {
    try {
      await migrate(db);
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  return db;
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

function openSqlite(file: string, sync: SqliteSync): Database {
  const memory = file === ':memory:';
  if (!memory) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // One writer. WAL keeps readers off the writer's back. synchronous=FULL makes each commit survive
  // power loss, and group commit pays that fsync once per batch, not once per event; NORMAL
  // (TPS_SQLITE_SYNC) leaves the fsync to the checkpoints: a commit survives the process being
  // killed, not the machine losing power. The writer never checkpoints (see checkpointer).
  const pragmas = `PRAGMA journal_mode=WAL; PRAGMA synchronous=${sync.toUpperCase()}; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;`;
  const knex = sqlitePool(file, 1, 1, `${pragmas}${memory ? '' : ' PRAGMA wal_autocheckpoint=0;'}`);
  // Readers for long searches: memory-mapped, so walking an index and fetching its rows costs no syscalls.
  const reader = memory ? knex : sqlitePool(file, 0, 4, 'PRAGMA busy_timeout=5000; PRAGMA query_only=1; PRAGMA mmap_size=1073741824; PRAGMA cache_size=-16384;');
  const checkpoints = memory ? undefined : checkpointer(file);
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
// WAL pages (4 KiB) past which a checkpoint also restarts the WAL.
const WAL_RESTART_PAGES = 2048;

/**
 * Checkpoints on a connection of their own. Left to the writer, every ~1000 pages of WAL one commit
 * would also copy them back into the database and fsync it: tens of milliseconds during which no
 * evaluation is answered. PASSIVE never waits for the writer or for readers, and runs on another
 * thread of the pool. But the WAL only starts over when a writer finds it fully copied, which a
 * writer that never pauses does not (it grew past 200 MB in a 10-second benchmark): once it passes
 * WAL_RESTART_PAGES, a RESTART checkpoint makes the writer wait for the little that is left to
 * copy, and the next commit writes the file from its start again. (Measured at half load: p99 15 ms
 * against 21 ms with the writer checkpointing itself, and 36 ms with TRUNCATE or a 32 MB bound.)
 */
function checkpointer(file: string): { stop(): Promise<void> } {
  const knex = sqlitePool(file, 0, 1, 'PRAGMA busy_timeout=5000;');
  const checkpoint = async () => {
    const [passive] = (await knex.raw('PRAGMA wal_checkpoint(PASSIVE)')) as { log: number }[];
    if ((passive?.log ?? 0) > WAL_RESTART_PAGES) await knex.raw('PRAGMA wal_checkpoint(RESTART)');
  };
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    // One at a time: a tick that finds the last checkpoint still running skips. One that fails (the
    // database busy or gone) is simply tried again at the next tick.
    running ??= checkpoint()
      .catch(() => undefined)
      .finally(() => (running = undefined));
  }, CHECKPOINT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await knex.destroy();
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
