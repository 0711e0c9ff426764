import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';
import { EVENT_COLUMNS, type EventRow } from './eventRows.js';
import { FACET_COLUMNS, type Facet } from './facets.js';
import { hash32 } from './reasonIndex.js';
import { all, run } from './sqliteStatements.js';
import type { MarkIO } from './timeMarks.js';

/** A row the insert stored: its seq and key. */
export type Inserted = { seq: number; environment: string; telemetry_id: string };

/**
 * The statements that storing a batch of events needs, inside one transaction. The logic of a
 * batch (eventWrites.ts) is the same for both stores; so are these, but for the SQL's dialect.
 */
export interface EventWriteTx extends MarkIO {
  /** Rows are EVENT_COLUMNS values, then the facet id. */
  insertEvents(rows: readonly unknown[][], ignoreConflicts: boolean): Promise<Inserted[]>;
  /** The event_reasons rows (reasonIndex.ts). */
  insertReasonRows(rows: readonly { key: number; seq: number; facet: number }[]): Promise<void>;
  /** The ids of these facets (facets.ts), created where new. */
  facetIds(facets: readonly Facet[]): Promise<number[]>;
  eventsByKey(keys: readonly (readonly [environment: string, telemetryId: string])[]): Promise<EventRow[]>;
  /** Retention: these events and their reason index rows go. */
  deleteEvents(seqs: readonly number[], reasonRows: readonly { key: number; facet: number; seq: number }[]): Promise<void>;
  /** Retention: the time marks of buckets before this one go. */
  forgetMarks(environment: string, beforeBucket: number): Promise<void>;
}

export type EventWriter = <T>(work: (tx: EventWriteTx) => Promise<T>) => Promise<T>;

// pg_advisory_xact_lock(int, int): a class for TPS event writers, an object per schema.
const WRITER_LOCK_CLASS = 0x545053;

/** How a store runs a statement inside the writer's transaction. */
interface Statements {
  run(sql: string, params: readonly unknown[]): Promise<void>;
  all<T>(sql: string, params: readonly unknown[]): Promise<T[]>;
}

/**
 * A batch is bound as one JSON parameter, an array of rows, each an array of values, unpacked by
 * the database (json_each, json_array_elements): one statement of each kind whatever the batch
 * size, and nothing bound value by value, which cost more CPU than storing the events. The two
 * stores differ only in how the JSON is unpacked and in PostgreSQL's casts from text.
 */
interface JsonRows {
  /** The FROM of the rows; each row is `value`. */
  from: string;
  /** Column i of a row, as a value of this SQL type (text when not given). */
  value(i: number, type?: string): string;
}

const SQLITE_JSON: JsonRows = {
  from: 'json_each(?)',
  // Column affinity converts the rest; the compressed explanation travels as hex.
  value: (i, type) => (type === 'bytea' ? `unhex(value->>${i})` : `value->>${i}`),
};

const POSTGRES_JSON: JsonRows = {
  from: 'json_array_elements(?::json) AS value',
  value: (i, type) => (type === 'bytea' ? `decode(value->>${i}, 'hex')` : type ? `(value->>${i})::${type}` : `value->>${i}`),
};

// The columns a batch writes, with the SQL type of each that is not text.
const EVENT_INSERT = [...EVENT_COLUMNS, 'facet'];
const EVENT_TYPES: Record<string, string> = { created_at: 'bigint', score: 'double precision', monitored: 'boolean', explanation_z: 'bytea', facet: 'integer' };
const EXPLANATION_Z = EVENT_COLUMNS.indexOf('explanation_z');
const RETURNING = 'RETURNING seq, environment, telemetry_id';

function writeSql(json: JsonRows) {
  const rows = (types: readonly (string | undefined)[]) => `SELECT ${types.map((t, i) => json.value(i, t)).join(', ')} FROM ${json.from} WHERE true`;
  const reasonKey = rows(['integer', 'integer', 'bigint']);
  return {
    insert: (ignoreConflicts: boolean) =>
      `INSERT INTO events (${EVENT_INSERT.join(', ')}) ${rows(EVENT_INSERT.map((c) => EVENT_TYPES[c]))} ${ignoreConflicts ? 'ON CONFLICT (environment, telemetry_id) DO NOTHING ' : ''}${RETURNING}`,
    reasons: `INSERT INTO event_reasons (key, facet, seq) ${reasonKey}`,
    newFacets: `INSERT INTO event_facets (${FACET_COLUMNS.join(', ')}) ${rows(FACET_COLUMNS.map(() => undefined))} ON CONFLICT DO NOTHING`,
    facets: `SELECT id, ${FACET_COLUMNS.join(', ')} FROM event_facets WHERE (${FACET_COLUMNS.join(', ')}) IN (${rows(FACET_COLUMNS.map(() => undefined))})`,
    marksFrom: 'SELECT bucket, lo, hi FROM event_time_marks WHERE environment = ? AND bucket >= ?',
    saveMarks: `INSERT INTO event_time_marks (environment, bucket, lo, hi) ${rows([undefined, 'bigint', 'bigint', 'bigint'])} ON CONFLICT (environment, bucket) DO UPDATE SET lo = excluded.lo, hi = excluded.hi`,
    eventsByKey: `SELECT * FROM events WHERE (environment, telemetry_id) IN (${rows([undefined, undefined])})`,
    deleteReasons: `DELETE FROM event_reasons WHERE (key, facet, seq) IN (${reasonKey})`,
    deleteEvents: `DELETE FROM events WHERE seq IN (${rows(['bigint'])})`,
    forgetMarks: 'DELETE FROM event_time_marks WHERE environment = ? AND bucket < ?',
  };
}

/** The statements of a batch, the same for both stores but for how the JSON is unpacked. */
function writeTx(db: Statements, sql: ReturnType<typeof writeSql>): EventWriteTx {
  const json = (rows: readonly (readonly unknown[])[]) => [JSON.stringify(rows)];
  return {
    insertEvents: (rows, ignoreConflicts) =>
      db.all<Inserted>(sql.insert(ignoreConflicts), json(rows.map((row) => row.map((v, i) => (i === EXPLANATION_Z && v ? (v as Buffer).toString('hex') : v))))),
    insertReasonRows: (rows) => db.run(sql.reasons, json(rows.map((r) => [r.key, r.facet, r.seq]))),
    async facetIds(facets) {
      await db.run(sql.newFacets, json(facets));
      const found = await db.all<{ id: number | string } & Record<string, string>>(sql.facets, json(facets));
      const byKey = new Map(found.map((r) => [FACET_COLUMNS.map((c) => r[c]).join('\u0000'), Number(r.id)]));
      return facets.map((f) => byKey.get(f.join('\u0000'))!);
    },
    marksFrom: async (environment, bucket) =>
      (await db.all<{ bucket: number | string; lo: number | string; hi: number | string }>(sql.marksFrom, [environment, bucket])).map((m) => ({ bucket: Number(m.bucket), lo: Number(m.lo), hi: Number(m.hi) })),
    saveMarks: (marks) => db.run(sql.saveMarks, json(marks.map((m) => [m.environment, m.bucket, m.lo, m.hi]))),
    eventsByKey: (keys) => db.all<EventRow>(sql.eventsByKey, json(keys)),
    async deleteEvents(seqs, reasonRows) {
      await db.run(sql.deleteReasons, json(reasonRows.map((r) => [r.key, r.facet, r.seq])));
      await db.run(sql.deleteEvents, json(seqs.map((seq) => [seq])));
    },
    forgetMarks: (environment, beforeBucket) => db.run(sql.forgetMarks, [environment, beforeBucket]),
  };
}

const SQLITE_SQL = writeSql(SQLITE_JSON);
const POSTGRES_SQL = writeSql(POSTGRES_JSON);

/**
 * SQLite: the writer connection (the pool holds one) taken from knex for the whole transaction, so
 * nothing else runs on it meanwhile, and every statement prepared once (sqliteStatements.ts).
 * BEGIN IMMEDIATE takes the write lock up front, so another process's writer waits in busy_timeout
 * instead of failing on a lock upgrade.
 */
export function sqliteEventWriter(knex: Knex): EventWriter {
  return async (work) => {
    const conn = (await knex.client.acquireConnection()) as sqlite3.Database;
    try {
      await run(conn, 'BEGIN IMMEDIATE');
      try {
        const result = await work(writeTx({ run: (sql, params) => run(conn, sql, params), all: (sql, params) => all(conn, sql, params) }, SQLITE_SQL));
        await run(conn, 'COMMIT');
        return result;
      } catch (err) {
        await run(conn, 'ROLLBACK').catch(() => undefined);
        throw err;
      }
    } finally {
      knex.client.releaseConnection(conn);
    }
  };
}

/**
 * PostgreSQL: a knex transaction. It hands out seq before commit, so two writers could commit out
 * of seq order and a stream reader that already passed seq N would never see N-1. Event writers
 * therefore take one transaction-scoped lock: seq order is commit order. Group commit makes this
 * one lock per batch, not per event.
 */
export function postgresEventWriter(knex: Knex): EventWriter {
  const config = knex.client.config as { searchPath?: string[] };
  const lock = hash32(config.searchPath?.[0] ?? 'public');
  return (work) =>
    knex.transaction(async (trx) => {
      await trx.raw('select pg_advisory_xact_lock(?, ?)', [WRITER_LOCK_CLASS, lock]);
      const db: Statements = {
        run: async (sql, params) => void (await trx.raw(sql, params as Knex.Value[])),
        all: async <T>(sql: string, params: readonly unknown[]) => (await trx.raw(sql, params as Knex.Value[])).rows as T[],
      };
      return work(writeTx(db, POSTGRES_SQL));
    });
}
