import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { SqliteSync } from '../config/env.js';
import { CheckpointLog } from './checkpointLog.js';
import { checkpointer, type CheckpointerOptions } from './checkpointer.js';
import { dialectOf, type Dialect } from './dialect.js';
import { migrationSource } from './migrations.js';
import { inPostgresTurn, inSqliteTurn } from './migrationTurn.js';
import { finalizeStatements } from './sqliteStatements.js';

// bigint columns (seq, timestamps) fit in a double; read them as numbers, not strings.
pg.types.setTypeParser(20, (value) => Number(value));

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
  /** SQLite in a file: its checkpointer's recent work (Server-Timing). */
  checkpoints?: CheckpointLog;
  /** SQLite: the page size the file was made with, which may not be the one asked for (OpenOptions.sqlitePageSize). */
  pageSize?: number;
  close(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = './data/tps.sqlite';

/** Opens the store named by DATABASE_URL (CONTRACT): postgres://… , sqlite:PATH or a plain path. */
export interface OpenOptions {
  migrate?: boolean;
  sqliteSync?: SqliteSync;
  /** Called with the seconds each SQLite checkpoint that held the writer's connection took (metrics; checkpointer.ts). */
  onCheckpoint?: (seconds: number) => void;
  /**
   * SQLite in a file: false when another process checkpoints it (a cluster worker, whose primary is
   * the file's one writer); a second checkpointer would only compete with the writer's for the WAL.
   */
  checkpoint?: boolean;
  /** SQLite: the WAL's size in MiB at which the writer catches up and the WAL starts over (TPS_SQLITE_WAL_MB, checkpointer.ts). */
  sqliteWalMb?: number;
  /** SQLite: the page size in bytes of a new file (TPS_SQLITE_PAGE_SIZE); PAGE_SIZE unless set. An existing file keeps its own. */
  sqlitePageSize?: number;
}

// knex prints its own warnings with console.log: on stdout, "Acquire connection error" with the
// error's whole stack. That corrupts `tps events export > file`, `--json` output and the server's
// JSON log, and the caller gets the error anyway: its first line, on stderr.
const toStderr = (message: unknown): void => void process.stderr.write(`${String(message).split('\n')[0]}\n`);
const KNEX_LOG = { warn: toStderr, error: toStderr, deprecate: toStderr };

/** Whether DATABASE_URL names PostgreSQL; anything else is a SQLite file (CONTRACT). */
export const isPostgresUrl = (url: string | undefined): url is string => /^postgres(ql)?:\/\//.test(url ?? '');

export async function openDatabase(url: string | undefined, options: OpenOptions = {}): Promise<Database> {
  const db = isPostgresUrl(url)
    ? openPostgres(url)
    : openSqlite(sqlitePath(url), options.sqliteSync ?? 'full', options.sqlitePageSize ?? PAGE_SIZE, options.checkpoint === false ? undefined : { onCheckpoint: options.onCheckpoint, walMb: options.sqliteWalMb });
  try {
    if (db.dialect === 'sqlite') await checkSqliteVersion(db.knex);
    if (options.migrate !== false) await migrate(db);
    // Read once the schema exists: SQLite fixes a new file's page size when it first writes it.
    if (db.dialect === 'sqlite') db.pageSize = ((await db.knex.raw('PRAGMA page_size')) as [{ page_size: number }])[0].page_size;
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

/** The SQLite file a DATABASE_URL that is not PostgreSQL's names (`sqlite:PATH`, `sqlite:///PATH` or a bare path). */
export function sqlitePath(url: string | undefined): string {
  if (!url) return DEFAULT_SQLITE_PATH;
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') : url;
}

/** A knex pool over one SQLite file, each connection set up by `pragmas`. */
function sqlitePool(file: string, min: number, max: number, pragmas: string): Knex {
  const knex = knexFactory({
    client: 'sqlite3',
    log: KNEX_LOG,
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

/**
 * The page size of a new SQLite file unless TPS_SQLITE_PAGE_SIZE says otherwise. A commit rewrites
 * every page it touches, whole, into the WAL: the right-hand leaf of each index range a batch
 * appends to, and each reason key's leaf. Those pages are mostly unchanged, so smaller pages write
 * fewer bytes: 1 KiB pages halve the bytes written per event against SQLite's default 4 KiB, for
 * ~20% more bytes stored (bench/ROUNDS.md, tenth round). An event row (~400 bytes) still fits on
 * one page. Where the disk keeps up and the cores are the limit, 4 KiB pages shortened the tail at
 * light load (thirty-sixth round): the choice is the machine's. A file keeps the page size it was
 * created with; SQLite ignores this setting on an existing file.
 */
export const PAGE_SIZE = 1024;

/**
 * Every connection to the file in this process goes through the sqlite3 package. A second SQLite
 * library in the process (better-sqlite3, node:sqlite) would lose its locks whenever this one
 * closes a descriptor on the file, as POSIX locks belong to the process: that corrupted a store
 * in the fifteenth round (bench/ROUNDS.md). `checkpointing` undefined: this process leaves the WAL
 * to another's checkpointer.
 */
function openSqlite(file: string, sync: SqliteSync, pageSize: number, checkpointing: CheckpointerOptions | undefined): Database {
  const memory = file === ':memory:';
  if (!memory) fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  // One writer. WAL keeps readers off the writer's back. synchronous=FULL makes each commit survive
  // power loss, and group commit pays that fsync once per batch, not once per event; NORMAL
  // (TPS_SQLITE_SYNC) leaves the fsync to the checkpoints: a commit survives the process being
  // killed, not the machine losing power. SQLite never checkpoints on its own (checkpointer.ts).
  const synchronous = `PRAGMA synchronous=${sync.toUpperCase()};`;
  // The busy timeout first: on a new file another process may hold the lock journal_mode=WAL needs.
  const pragmas = `PRAGMA busy_timeout=5000; PRAGMA page_size=${pageSize}; PRAGMA journal_mode=WAL; ${synchronous} PRAGMA foreign_keys=ON;`;
  const knex = sqlitePool(file, 1, 1, `${pragmas}${memory ? '' : ' PRAGMA wal_autocheckpoint=0;'}`);
  // Readers for long searches: memory-mapped, so walking an index and fetching its rows costs no syscalls.
  const reader = memory ? knex : sqlitePool(file, 0, 4, 'PRAGMA busy_timeout=5000; PRAGMA query_only=1; PRAGMA mmap_size=1073741824; PRAGMA cache_size=-16384;');
  // Checkpoints copy the WAL back from a connection of their own (checkpointer.ts), with the writer's synchronous setting.
  const log = memory || !checkpointing ? undefined : new CheckpointLog();
  const checkpoints = log && checkpointer(knex, sqlitePool(file, 0, 1, `PRAGMA busy_timeout=5000; ${synchronous}`), file, { ...checkpointing, log });
  return {
    knex,
    reader,
    dialect: 'sqlite',
    describe: `sqlite:${file}`,
    checkpoints: log,
    async close() {
      await checkpoints?.stop();
      if (reader !== knex) await reader.destroy();
      await knex.destroy();
    },
  };
}

/** A Database over a knex instance that someone else owns and closes (knex seeds are handed only knex). */
export function databaseOf(knex: Knex): Database {
  const dialect = dialectOf(knex);
  return { knex, reader: knex, dialect, describe: dialect, close: async () => undefined };
}

function openPostgres(url: string): Database {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema') ?? undefined;
  parsed.searchParams.delete('schema');
  const knex = knexFactory({
    client: 'pg',
    log: KNEX_LOG,
    connection: parsed.toString(),
    searchPath: schema ? [schema] : undefined,
    pool: { min: 0, max: 10 },
  });
  const safe = `postgres://${parsed.host}${parsed.pathname}${schema ? `?schema=${schema}` : ''}`;
  return { knex, reader: knex, dialect: 'postgres', describe: safe, close: () => knex.destroy() };
}

/** Runs the migrations, in turn with any other process migrating the same store (migrationTurn.ts). */
export async function migrate(db: Database): Promise<void> {
  const waiting = () => toStderr(`TPS is waiting for another process to finish migrating ${db.describe}`);
  if (db.dialect === 'sqlite') return inSqliteTurn(db.knex, waiting, async (trx) => void (await trx.migrate.latest({ migrationSource })));
  const schema = (db.knex.client.config.searchPath as string[] | undefined)?.[0];
  // knex keeps the URL parsed, as pg takes it.
  await inPostgresTurn(db.knex.client.config.connection as pg.ClientConfig, schema, waiting, async () => {
    if (schema) await db.knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
    await db.knex.migrate.latest({ migrationSource, schemaName: schema });
  });
}
