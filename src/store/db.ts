import fs from 'node:fs';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations.js';

// bigint columns (seq, timestamps) fit in a double; read them as numbers, not strings.
pg.types.setTypeParser(20, (value) => Number(value));

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  knex: Knex;
  dialect: Dialect;
  /** Where the data lives, for logs; never contains a password. */
  describe: string;
  close(): Promise<void>;
}

export const DEFAULT_SQLITE_PATH = './data/tps.sqlite';

/** Opens the store named by DATABASE_URL (CONTRACT): postgres://… , sqlite:PATH or a plain path. */
export async function openDatabase(url: string | undefined, options: { migrate?: boolean } = {}): Promise<Database> {
  const db = /^postgres(ql)?:\/\//.test(url ?? '') ? openPostgres(url!) : openSqlite(sqlitePath(url));
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

function openSqlite(file: string): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const knex = knexFactory({
    client: 'sqlite3',
    connection: { filename: file },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      // WAL keeps readers off the writer's back; synchronous=FULL makes each commit survive
      // power loss, and group commit pays that fsync once per batch, not once per event.
      afterCreate: (conn: { exec(sql: string, cb: (err: Error | null) => void): void }, done: (err: Error | null, conn: unknown) => void) => {
        conn.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON;', (err) => done(err, conn));
      },
    },
  });
  return { knex, dialect: 'sqlite', describe: `sqlite:${file}`, close: () => knex.destroy() };
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
  return { knex, dialect: 'postgres', describe: safe, close: () => knex.destroy() };
}

export async function migrate(db: Database): Promise<void> {
  const schema = db.dialect === 'postgres' ? (db.knex.client.config.searchPath as string[] | undefined)?.[0] : undefined;
  if (schema) await db.knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
  await db.knex.migrate.latest({ migrationSource, schemaName: schema });
}
