import crypto from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Knex } from 'knex';
import pg from 'pg';

// Several processes may migrate one store at once: a rolling deploy, `tps` commands beside a
// server, two services started together. knex's own migration lock is taken only after it has
// made its tables (check, then create, then insert the lock's row), so two processes on an empty
// store could fail with "already exists" or insert two lock rows, after which every start failed
// with "Migration table is already locked". Each process waits for its turn instead.

/** The advisory lock's key for migrating one schema: the same in every process, one per schema. */
export function migrationLockKey(schema: string): string {
  return crypto.createHash('sha256').update(`tps:migrate:${schema}`).digest().readBigInt64BE(0).toString();
}

/**
 * PostgreSQL: `run` (schema creation and knex's migrations) under a session advisory lock, held on
 * a connection of its own (the migrations use the pool) and closed with it: a process that dies
 * mid-migration frees it. `waiting` is told once when another process holds it.
 */
export async function inPostgresTurn<T>(connection: pg.ClientConfig, schema: string | undefined, waiting: () => void, run: () => Promise<T>): Promise<T> {
  const client = new pg.Client(connection);
  // A connection lost while idle would otherwise throw from an 'error' event; the migration's own
  // queries fail with it anyway.
  client.on('error', () => undefined);
  await client.connect();
  try {
    const name = schema ?? (await client.query<{ s: string | null }>('SELECT current_schema() AS s')).rows[0]?.s ?? 'public';
    const key = migrationLockKey(name);
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [key]);
    if (!rows[0]?.locked) {
      waiting();
      await client.query('SELECT pg_advisory_lock($1::bigint)', [key]);
    }
    return await run();
  } finally {
    // Ending the session releases the lock.
    await client.end().catch(() => undefined);
  }
}

/** 'TPS1': marks the file as TPS's (SQLite's header field for an application's own files). */
const APPLICATION_ID = 0x54505331;

class Busy extends Error {}

/** The pause after a refused turn, growing to the longest: SQLite may answer busy at once, without its busy handler. */
const FIRST_PAUSE_MS = 100;
const LONGEST_PAUSE_MS = 1000;
/** How often `waiting` is told again while the turn has not come. */
const REMIND_MS = 30_000;

/**
 * SQLite: `run` in one transaction whose first statement writes (setting the application id),
 * so that it holds the file's write lock from the start, before knex looks at its tables. The
 * connection's busy handler waits 5 s for another process's lock (PRAGMA busy_timeout, db.ts); a
 * migration may hold it far longer, so the turn is asked for again, after a pause, until it comes.
 * `waiting` is told at the first refusal and again every `remindMs`.
 */
export async function inSqliteTurn(knex: Knex, waiting: () => void, run: (trx: Knex.Transaction) => Promise<void>, { remindMs = REMIND_MS } = {}): Promise<void> {
  let pauseMs = FIRST_PAUSE_MS;
  let toldAt: number | undefined;
  for (;;) {
    try {
      return await knex.transaction(async (trx) => {
        try {
          await trx.raw(`PRAGMA application_id = ${APPLICATION_ID}`);
        } catch (err) {
          throw (err as { code?: string }).code === 'SQLITE_BUSY' ? new Busy() : err;
        }
        await run(trx);
      });
    } catch (err) {
      if (!(err instanceof Busy)) throw err;
      if (toldAt === undefined || Date.now() - toldAt >= remindMs) {
        toldAt = Date.now();
        waiting();
      }
      await sleep(pauseMs);
      pauseMs = Math.min(LONGEST_PAUSE_MS, pauseMs * 2);
    }
  }
}
