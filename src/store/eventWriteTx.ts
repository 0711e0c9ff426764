import type { Knex } from 'knex';
import type pg from 'pg';
import type sqlite3 from 'sqlite3';
import { dialectOf } from './dialect.js';
import { EVENT_COLUMNS, type EventRow } from './eventRows.js';
import { FACET_COLUMNS, type Facet } from './facets.js';
import { hash32 } from './reasonIndex.js';
import { keptWriter } from './keptWriter.js';
import { all, run } from './sqliteStatements.js';
import { BUCKET_MS, marksUpsertSql } from './timeMarks.js';

/** An event to insert, as the JSON text of an array: EVENT_COLUMNS values (explanation_z as hex), then its facet id, then its reason keys (reasonIndex.ts). */
export type EventInsert = string;

/**
 * The statements of a transaction of event writes (eventWrites.ts holds their logic). The same
 * for both stores, but for the SQL's dialect.
 */
export interface EventWriteTx {
  /** The ids of these facets (facets.ts), created where new. */
  facetIds(facets: readonly Facet[]): Promise<number[]>;
  /** Retention: these events and their reason index rows go. */
  deleteEvents(seqs: readonly number[], reasonRows: readonly { key: number; facet: number; seq: number }[]): Promise<void>;
  /** Retention: the time marks of buckets before this one go. */
  forgetMarks(environment: string, beforeBucket: number): Promise<void>;
}

export interface EventWriter {
  transaction<T>(work: (tx: EventWriteTx) => Promise<T>): Promise<T>;
  /**
   * Stores the events with their reason index rows and time marks, as a transaction of its own; a
   * taken key fails the whole batch: the evaluate path's commit. One statement, so one round trip
   * to the database, not one per table.
   */
  insertAlone(rows: readonly EventInsert[]): Promise<void>;
  /**
   * Stores the events whose keys are new, skipping the taken, and returns the stored rows under the
   * keys it skipped (every other row it stored), as one transaction, so that retention cannot remove
   * them in between: the ingest path's commit. The rows' keys are each once in the batch.
   */
  insertNew(rows: readonly EventInsert[]): Promise<EventRow[]>;
}

// pg_advisory_xact_lock(int, int): a class for TPS event writers, an object per schema (hash32 of its name).
export const WRITER_LOCK_CLASS = 0x545053;

/** How a store runs a statement inside the writer's transaction. */
interface Statements {
  run(sql: string, params: readonly unknown[]): Promise<void>;
  all<T>(sql: string, params: readonly unknown[]): Promise<T[]>;
}

/**
 * A batch is bound as one JSON parameter, an array of rows, each an array of values, unpacked by
 * the database (jsonb_each, jsonb_array_elements): one statement of each kind whatever the batch
 * size, and nothing bound value by value, which cost more CPU than storing the events. The rows
 * come out as binary JSON, so each of a row's twenty columns is found by offset; as JSON text,
 * every column read parsed the row again. The two stores differ only in how the JSON is unpacked,
 * in PostgreSQL's casts from text, and in how the batch's insert also writes its reason rows and
 * time marks (SQLITE_BATCHES, postgresInsert).
 */
interface Dialect {
  /** A FROM item over the rows of the JSON array `param`; each row is `value`. */
  rows(param: string): string;
  /** Column i of a row, as a value of this SQL type (text when not given). */
  value(i: number, type?: string): string;
  /** timeMarks.bucketOf over an integer column. */
  bucket(column: string): string;
}

const SQLITE: Dialect = {
  rows: (param) => `jsonb_each(${param})`,
  // Column affinity converts the rest; the compressed explanation travels as hex.
  value: (i, type) => (type === 'bytea' ? `unhex(value->>${i})` : `value->>${i}`),
  // Integer division truncates; bucketOf floors.
  bucket: (c) => `(${c} / ${BUCKET_MS} - (${c} % ${BUCKET_MS} < 0))`,
};

const POSTGRES: Dialect = {
  rows: (param) => `jsonb_array_elements(${param}::jsonb) AS value`,
  value: (i, type) => (type === 'bytea' ? `decode(value->>${i}, 'hex')` : type ? `(value->>${i})::${type}` : `value->>${i}`),
  bucket: (c) => `(${c} / ${BUCKET_MS} - (${c} % ${BUCKET_MS} < 0)::int)`,
};

// An EventInsert's columns, with the SQL type of each that is not text; its reason keys follow.
const EVENT_INSERT = [...EVENT_COLUMNS, 'facet'];
const EVENT_TYPES: Record<string, string> = { created_at: 'bigint', score: 'double precision', monitored: 'boolean', explanation_z: 'bytea', facet: 'integer' };
const [TELEMETRY_ID, ENVIRONMENT, REASON_KEYS] = [EVENT_INSERT.indexOf('telemetry_id'), EVENT_INSERT.indexOf('environment'), EVENT_INSERT.length];

function writeSql(d: Dialect) {
  const rows = (types: readonly (string | undefined)[]) => `SELECT ${types.map((t, i) => d.value(i, t)).join(', ')} FROM ${d.rows('?')} WHERE true`;
  const reasonKey = rows(['integer', 'integer', 'bigint']);
  return {
    /** The events insert's columns and values, FROM a relation of rows named value. */
    insertEvents: (from: string, ignoreConflicts: boolean) =>
      `INSERT INTO events (${EVENT_INSERT.join(', ')}) SELECT ${EVENT_INSERT.map((c, i) => d.value(i, EVENT_TYPES[c])).join(', ')} FROM ${from} ${
        ignoreConflicts ? 'ON CONFLICT (environment, telemetry_id) DO NOTHING' : ''
      }`,
    /** The batch's rows (`batch`, as b) joined to the events it added (`added`, as e), once per reason key (`keys` of b.value). */
    addedReasons: (batch: string, added: string, keys: (row: string) => string) =>
      `FROM ${batch} AS b JOIN ${added} ON e.environment = b.value->>${ENVIRONMENT} AND e.telemetry_id = b.value->>${TELEMETRY_ID} CROSS JOIN ${keys(`b.value->${REASON_KEYS}`)}`,
    newFacets: `INSERT INTO event_facets (${FACET_COLUMNS.join(', ')}) ${rows(FACET_COLUMNS.map(() => undefined))} ON CONFLICT DO NOTHING`,
    facets: `SELECT id, ${FACET_COLUMNS.join(', ')} FROM event_facets WHERE (${FACET_COLUMNS.join(', ')}) IN (${rows(FACET_COLUMNS.map(() => undefined))})`,
    /** The events stored under the keys of a relation of rows named value. */
    storedUnder: (from: string) => `(environment, telemetry_id) IN (SELECT ${d.value(ENVIRONMENT)}, ${d.value(TELEMETRY_ID)} FROM ${from})`,
    deleteReasons: `DELETE FROM event_reasons WHERE (key, facet, seq) IN (${reasonKey})`,
    deleteEvents: `DELETE FROM events WHERE seq IN (${rows(['bigint'])})`,
    forgetMarks: 'DELETE FROM event_time_marks WHERE environment = ? AND bucket < ?',
  };
}

const SQLITE_SQL = writeSql(SQLITE);
const POSTGRES_SQL = writeSql(POSTGRES);

/** Rows of values as one JSON parameter. */
const json = (rows: readonly (readonly unknown[])[]) => JSON.stringify(rows);
/** Event rows, each JSON text already, as one JSON parameter. */
const eventsJson = (rows: readonly EventInsert[]) => `[${rows.join(',')}]`;

/** The statements of a transaction. */
function writeTx(db: Statements, sql: typeof SQLITE_SQL): EventWriteTx {
  return {
    async facetIds(facets) {
      await db.run(sql.newFacets, [json(facets)]);
      const found = await db.all<{ id: number | string } & Record<string, string>>(sql.facets, [json(facets)]);
      const byKey = new Map(found.map((r) => [FACET_COLUMNS.map((c) => r[c]).join('\u0000'), Number(r.id)]));
      return facets.map((f) => byKey.get(f.join('\u0000'))!);
    },
    async deleteEvents(seqs, reasonRows) {
      await db.run(sql.deleteReasons, [json(reasonRows.map((r) => [r.key, r.facet, r.seq]))]);
      await db.run(sql.deleteEvents, [json(seqs.map((seq) => [seq]))]);
    },
    forgetMarks: (environment, beforeBucket) => db.run(sql.forgetMarks, [environment, beforeBucket]),
  };
}

// An ingest batch's taken keys: their stored rows, as the statement that skipped them saw them.
const TAKEN_COLUMNS = ['seq', ...EVENT_INSERT].join(', ');

// Evaluate's batches: a taken key (the events added fewer than the batch) fails the whole batch.
const SQLITE_TAKEN_KEY_FAILS = `
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: events.environment, events.telemetry_id')
      WHERE (SELECT count(*) FROM events NOT INDEXED WHERE seq > NEW.base) < json_array_length(NEW.events);`;

/**
 * A trigger's steps that store the batch NEW.events, its reason rows and its time marks. `strict`
 * (evaluate's batches): a taken key fails the whole batch; otherwise (ingest's) it is skipped.
 */
const sqliteStoreBatch = (strict: boolean) => `
    ${SQLITE_SQL.insertEvents('jsonb_each(NEW.events) WHERE true ORDER BY key', true)};${strict ? SQLITE_TAKEN_KEY_FAILS : ''}
    INSERT INTO event_reasons (key, facet, seq) SELECT k.value, e.facet, e.seq
      ${SQLITE_SQL.addedReasons('jsonb_each(NEW.events)', 'events e', (keys) => `json_each(${keys}) AS k`)} WHERE e.seq > NEW.base;
    ${marksUpsertSql('(SELECT environment, created_at, seq FROM events NOT INDEXED WHERE seq > NEW.base)', SQLITE.bucket)};`;

/**
 * SQLite has no statement that writes three tables, but a trigger can: inserting a batch into the
 * view event_batches inserts its events, then their reason rows, then their time marks, as one
 * statement (and so, alone, as one transaction). All of it is TEMP, kept by the writer connection
 * and built from the code's own column lists. `base` is the highest seq before the batch: the
 * events the batch added are those above it (seq is AUTOINCREMENT, never reused). Evaluate's view
 * fails a batch with a taken key; ingest's, event_batches_new, skips the key, and first
 * copies the stored rows of the batch's taken keys into event_batch_taken, within the same
 * statement, where no other writer (nor retention) can come between; the writer reads and empties
 * it next, before any other statement runs on the connection.
 */
const SQLITE_BATCHES = `
  CREATE TEMP VIEW IF NOT EXISTS event_batches (events, base) AS SELECT NULL, NULL;
  CREATE TEMP TRIGGER IF NOT EXISTS event_batches_insert INSTEAD OF INSERT ON event_batches BEGIN ${sqliteStoreBatch(true)}
  END;
  CREATE TEMP VIEW IF NOT EXISTS event_batches_new (events, base) AS SELECT NULL, NULL;
  CREATE TEMP TABLE IF NOT EXISTS event_batch_taken (${TAKEN_COLUMNS});
  CREATE TEMP TRIGGER IF NOT EXISTS event_batches_new_insert INSTEAD OF INSERT ON event_batches_new BEGIN
    INSERT INTO temp.event_batch_taken (${TAKEN_COLUMNS}) SELECT ${TAKEN_COLUMNS} FROM events WHERE ${SQLITE_SQL.storedUnder('jsonb_each(NEW.events)')};
    ${sqliteStoreBatch(false)}
  END;`;
const SQLITE_BASE = 'SELECT coalesce(max(seq), 0) AS base FROM events';
const SQLITE_INSERT_ALONE = `INSERT INTO event_batches (events, base) VALUES (?, (${SQLITE_BASE}))`;
const SQLITE_INSERT_NEW = `INSERT INTO event_batches_new (events, base) VALUES (?, (${SQLITE_BASE}))`;
const SQLITE_TAKEN = `DELETE FROM temp.event_batch_taken RETURNING ${TAKEN_COLUMNS}`;

const SQLITE_DROP_BATCHES = `
  DROP TRIGGER IF EXISTS temp.event_batches_insert; DROP VIEW IF EXISTS temp.event_batches;
  DROP TRIGGER IF EXISTS temp.event_batches_new_insert; DROP VIEW IF EXISTS temp.event_batches_new; DROP TABLE IF EXISTS temp.event_batch_taken;`;
const batchesReady = new WeakMap<sqlite3.Database, Promise<void>>();
const exec = (conn: sqlite3.Database, sql: string) => new Promise<void>((resolve, reject) => conn.exec(sql, (err) => (err ? reject(err) : resolve())));

/** event_batches goes from this connection, to be made again by its next write. */
async function dropBatches(conn: sqlite3.Database): Promise<void> {
  batchesReady.delete(conn);
  await exec(conn, SQLITE_DROP_BATCHES);
}

/**
 * Before a schema change (a migration, on the connection knex gives it): SQLite checks every
 * trigger of the connection at each ALTER TABLE, and event_batches names the tables a migration
 * renames or drops, so in a process that has written events a rollback failed on it. The next
 * write makes it again, for the schema then in place.
 */
export async function dropEventBatches(knex: Knex): Promise<void> {
  if (dialectOf(knex) !== 'sqlite') return;
  const conn = (await knex.client.acquireConnection()) as sqlite3.Database;
  try {
    await dropBatches(conn);
  } finally {
    knex.client.releaseConnection(conn);
  }
}

/** The writer connection, with event_batches made on it once. */
async function sqliteWriter(knex: Knex): Promise<sqlite3.Database> {
  const conn = (await knex.client.acquireConnection()) as sqlite3.Database;
  let ready = batchesReady.get(conn);
  if (!ready) {
    ready = exec(conn, SQLITE_BATCHES);
    batchesReady.set(conn, ready);
  }
  try {
    await ready;
  } catch (err) {
    await failed(knex, conn);
    throw err;
  }
  return conn;
}

/**
 * After a failed write, event_batches is dropped, to be made again by the next: a trigger that
 * names a table which is gone (a store being restored, say) would otherwise also fail SQLite's
 * check of every schema change on this connection, such as renaming the table back.
 */
async function failed(knex: Knex, conn: sqlite3.Database): Promise<void> {
  await dropBatches(conn).catch(() => undefined);
  knex.client.releaseConnection(conn);
}

/**
 * SQLite: the writer connection (the pool holds one) taken from knex for the whole transaction, so
 * nothing else runs on it meanwhile, and every statement prepared once (sqliteStatements.ts).
 * BEGIN IMMEDIATE takes the write lock up front, so another process's writer waits in busy_timeout
 * instead of failing on a lock upgrade. (A lone statement that writes takes it at its start.)
 */
export function sqliteEventWriter(knex: Knex): EventWriter {
  const kept = keptWriter(knex);
  const statements = (conn: sqlite3.Database): Statements => ({ run: (sql, params) => run(conn, sql, params), all: (sql, params) => all(conn, sql, params) });
  /**
   * A commit of its own on the writer, kept for the next (keptWriter.ts). A kept connection has
   * event_batches and the statements ready: the batch goes before this returns.
   */
  const onWriter = async <T>(work: (conn: sqlite3.Database) => Promise<T>): Promise<T> => {
    const conn = kept.take() ?? (await sqliteWriter(knex));
    let result: T;
    try {
      result = await work(conn);
    } catch (err) {
      await failed(knex, conn);
      throw err;
    }
    kept.keep(conn);
    return result;
  };
  return {
    async transaction(work) {
      const conn = await sqliteWriter(knex);
      const db = statements(conn);
      try {
        await db.run('BEGIN IMMEDIATE', []);
        const result = await work(writeTx(db, SQLITE_SQL));
        await db.run('COMMIT', []);
        knex.client.releaseConnection(conn);
        return result;
      } catch (err) {
        await db.run('ROLLBACK', []).catch(() => undefined); // nothing to roll back if BEGIN failed
        await failed(knex, conn);
        throw err;
      }
    },
    insertAlone: (rows) => onWriter((conn) => run(conn, SQLITE_INSERT_ALONE, [eventsJson(rows)])),
    insertNew: (rows) =>
      onWriter(async (conn) => {
        await run(conn, SQLITE_INSERT_NEW, [eventsJson(rows)]);
        return all<EventRow>(conn, SQLITE_TAKEN, []);
      }),
  };
}

/**
 * PostgreSQL: one statement, its data-modifying WITH inserting the events, then their reason rows
 * and time marks from what the insert returned, for the SQL of the rows' JSON text. It runs
 * after the writers' lock is taken, in the same transaction, for two reasons. PostgreSQL hands out
 * seq before commit, so two writers could commit out of seq order and a stream reader that already
 * passed seq N would never see N-1; under the lock, seq order is commit order. And a statement
 * reads the snapshot of its start: one that waited for the lock inside itself would compute time
 * marks without the last writer's.
 */
function postgresInsert(ignoreConflicts: boolean, select = 'SELECT seq, environment, telemetry_id FROM e'): (json: string) => string {
  const rest = `e AS (${POSTGRES_SQL.insertEvents('batch', ignoreConflicts)} RETURNING seq, environment, telemetry_id, created_at, facet),
    reasons AS (INSERT INTO event_reasons (key, facet, seq) SELECT k.value::integer, e.facet, e.seq
      ${POSTGRES_SQL.addedReasons('batch', 'e', (keys) => `LATERAL jsonb_array_elements_text(${keys}) AS k(value)`)}),
    marks AS (${marksUpsertSql('e', POSTGRES.bucket)})
    ${select}`;
  return (json) => `WITH batch AS (SELECT value FROM ${POSTGRES.rows(json)}), ${rest}`;
}
const POSTGRES_INSERT = postgresInsert(false);
const POSTGRES_INSERT_NEW = postgresInsert(true, 'SELECT count(*) FROM e')('?');
const POSTGRES_STORED_UNDER = `SELECT * FROM events WHERE ${POSTGRES_SQL.storedUnder(POSTGRES.rows('?'))}`;

/**
 * A function of the writer connection's session (pg_temp, as SQLite's event_batches is TEMP, and
 * built from the same column lists), made at the connection's first call. Sent as text, the insert
 * is planned anew each time, 3.4 ms of the 4–5 a batch of 24 took on the eighteenth round's VM;
 * PL/pgSQL keeps its plan, generic since no value of the batch changes it (1.2–2.3 ms a batch). A
 * VOLATILE function's statement reads a snapshot taken at its own start, so the insert, after the
 * writers' lock, sees the last writer's commit, as separate statements would. A call gives
 * undefined where the function cannot be made or is gone (a pooler that does not keep sessions):
 * that connection then does the work another way.
 */
function sessionFunction(name: string, create: string) {
  // Per connection: the function made (true), or not to be used there (false).
  const made = new WeakMap<pg.Client, Promise<boolean>>();
  return async (conn: pg.Client, param: string): Promise<pg.QueryResult<{ result: unknown }> | undefined> => {
    let ready = made.get(conn);
    if (!ready) made.set(conn, (ready = conn.query(create).then(() => true, () => false)));
    if (!(await ready)) return undefined;
    try {
      return await conn.query(`SELECT ${name}($1) AS result`, [param]);
    } catch (err) {
      if ((err as { code?: string }).code !== UNDEFINED_FUNCTION) throw err;
      made.set(conn, Promise.resolve(false));
      return undefined;
    }
  };
}
const UNDEFINED_FUNCTION = '42883';

/** The evaluate path's commit: the lock, then the insert (a taken key fails it). */
const PG_INSERT_FUNCTION = 'pg_temp.tps_insert_events';
const pgInsertFunction = (lock: string) => `CREATE OR REPLACE FUNCTION ${PG_INSERT_FUNCTION}(batch_json jsonb) RETURNS SETOF bigint
  LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $tps$
  BEGIN
    PERFORM ${lock};
    RETURN QUERY ${postgresInsert(false, 'SELECT count(*) FROM e')('batch_json')};
  END $tps$`;

// The stored rows under the keys (a JSON array of [environment, telemetryId]), each as to_jsonb's
// text, which names no table type the function would then depend on (a migration could not drop it).
// The explanation goes as plain hex, encoded here: to_jsonb renders bytea as bytea_output says, a
// setting of the database, role or session that may be 'escape'.
const TAKEN_ROWS = `SELECT (to_jsonb(ev) || jsonb_build_object('explanation_z', encode(ev.explanation_z, 'hex')))::text
  FROM events AS ev WHERE (environment, telemetry_id) IN (SELECT k->>0, k->>1 FROM jsonb_array_elements($1) AS k)`;
const batchKey = (row: string) => `${row}->>${ENVIRONMENT}, ${row}->>${TELEMETRY_ID}`;

/**
 * The ingest path's commit: the lock, the insert skipping taken keys, then the stored rows of the
 * keys it skipped. The keys are found against what the insert returned, never against events. The
 * rows are read by EXECUTE, planned at each call for the table as it is then: a generic plan made
 * while events was small looked them up by a scan of all of it (eighteenth round).
 */
const PG_INSERT_NEW_FUNCTION = 'pg_temp.tps_insert_new_events';
const pgInsertNewFunction = (lock: string) => `CREATE OR REPLACE FUNCTION ${PG_INSERT_NEW_FUNCTION}(batch_json jsonb) RETURNS SETOF text
  LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $tps$
  DECLARE taken jsonb;
  BEGIN
    PERFORM ${lock};
    ${postgresInsert(
      true,
      `SELECT coalesce(jsonb_agg(jsonb_build_array(${batchKey('b.value')})), '[]') INTO taken FROM batch AS b
        WHERE (${batchKey('b.value')}) NOT IN (SELECT environment, telemetry_id FROM e)`,
    )('batch_json')};
    IF jsonb_array_length(taken) > 0 THEN
      RETURN QUERY EXECUTE $taken$${TAKEN_ROWS}$taken$ USING taken;
    END IF;
  END $tps$`;

/** An events row as TAKEN_ROWS gives it: the explanation as hex. */
function fromJsonRow(text: string): EventRow {
  const row = JSON.parse(text) as Omit<EventRow, 'explanation_z'> & { explanation_z: string | null };
  return { ...row, explanation_z: row.explanation_z === null ? null : Buffer.from(row.explanation_z, 'hex') };
}

/** Statements inside a knex transaction. */
const knexStatements = (trx: Knex.Transaction): Statements => ({
  run: async (sql, params) => void (await trx.raw(sql, params as Knex.Value[])),
  all: async <T>(sql: string, params: readonly unknown[]) => (await trx.raw(sql, params as Knex.Value[])).rows as T[],
});

/**
 * PostgreSQL: a knex transaction that first takes the writers' lock (group commit makes it one per
 * batch). insertAlone and insertNew each call a function of the writer's session with the batch
 * as a parameter: one round trip, where a knex transaction takes four or five. Where the function
 * cannot be made or is gone, insertAlone sends the lock and the insert as one simple query, which
 * PostgreSQL runs as one transaction, the batch as a literal quoted by the driver's escapeLiteral;
 * insertNew runs as a knex transaction.
 */
export function postgresEventWriter(knex: Knex): EventWriter {
  const config = knex.client.config as { searchPath?: string[] };
  const lock = `pg_advisory_xact_lock(${WRITER_LOCK_CLASS}, ${hash32(config.searchPath?.[0] ?? 'public')})`;
  const lockSql = `SELECT ${lock}`;
  const insertFunction = sessionFunction(PG_INSERT_FUNCTION, pgInsertFunction(lock));
  const insertNewFunction = sessionFunction(PG_INSERT_NEW_FUNCTION, pgInsertNewFunction(lock));
  // The raw connection, not knex.raw: knex would take any ? inside a literal for a placeholder.
  const withConnection = async <T>(work: (conn: pg.Client) => Promise<T>): Promise<T> => {
    const conn = (await knex.client.acquireConnection()) as pg.Client;
    try {
      return await work(conn);
    } finally {
      knex.client.releaseConnection(conn);
    }
  };
  const locked = <T>(work: (db: Statements) => Promise<T>): Promise<T> =>
    knex.transaction(async (trx) => {
      await trx.raw(lockSql);
      return work(knexStatements(trx));
    });
  return {
    transaction: (work) => locked((db) => work(writeTx(db, POSTGRES_SQL))),
    insertAlone: (rows) =>
      withConnection(async (conn) => {
        if (!(await insertFunction(conn, eventsJson(rows)))) await conn.query(`${lockSql}; ${POSTGRES_INSERT(conn.escapeLiteral(eventsJson(rows)))}`);
      }),
    async insertNew(rows) {
      const batch = eventsJson(rows);
      const result = await withConnection((conn) => insertNewFunction(conn, batch));
      if (result) return result.rows.map((r) => fromJsonRow(r.result as string));
      // Under the lock, what is stored under the batch's keys before the insert is what it skips.
      return locked(async (db) => {
        const taken = await db.all<EventRow>(POSTGRES_STORED_UNDER, [batch]);
        await db.run(POSTGRES_INSERT_NEW, [batch]);
        return taken;
      });
    },
  };
}
