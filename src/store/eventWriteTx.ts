import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';
import { EVENT_COLUMNS, type EventRow } from './eventRows.js';
import type { Facet } from './facets.js';
import { hash32 } from './reasonIndex.js';
import { all, run } from './sqliteStatements.js';
import type { Mark, MarkIO } from './timeMarks.js';

/** A row the insert stored: its seq and key. */
export type Inserted = { seq: number; environment: string; telemetry_id: string };

/**
 * The statements that storing a batch of events needs, inside one transaction. The logic of a
 * batch (eventStore.ts) is the same for both stores; only these differ.
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

// Bound parameters per statement stay far below SQLite's 32766.
const MAX_ROWS = 256;
// pg_advisory_xact_lock(int, int): a class for TPS event writers, an object per schema.
const WRITER_LOCK_CLASS = 0x545053;

/**
 * Splits n rows into power-of-two chunks (12 → 8 + 4): a multi-row statement is prepared once per
 * size, and there are only a handful of sizes.
 */
function chunks<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (let size = MAX_ROWS; size >= 1; size >>= 1) {
    while (rows.length - at >= size) {
      out.push(rows.slice(at, at + size));
      at += size;
    }
  }
  return out;
}

const RETURNING = 'RETURNING seq, environment, telemetry_id';

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
        const result = await work(sqliteTx(conn));
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

// A batch is bound as one JSON parameter and unpacked by json_each: one statement of each kind
// whatever the batch size. (The compressed explanation travels as hex.)
const fromJson = (columns: readonly string[], transform: (column: string, i: number) => string = (_, i) => `value->>${i}`) =>
  `SELECT ${columns.map(transform).join(', ')} FROM json_each(?) WHERE true`;
const SQLITE_COLUMNS = [...EVENT_COLUMNS, 'facet'];
const EVENT_VALUES = fromJson(SQLITE_COLUMNS, (column, i) => (column === 'explanation_z' ? `unhex(value->>${i})` : `value->>${i}`));
const FACET_COLUMNS = ['environment', 'operation_key', 'resource_type', 'decision', 'risk_band', 'source'];
const SAME_FACET = FACET_COLUMNS.map((c, i) => `f.${c} = k.value->>${i}`).join(' AND ');
const EXPLANATION_Z = EVENT_COLUMNS.indexOf('explanation_z');
const hexBlob = (row: readonly unknown[]) => row.map((v, i) => (i === EXPLANATION_Z && v ? (v as Buffer).toString('hex') : v));

const SQL = {
  insert: (ignoreConflicts: boolean) =>
    `INSERT INTO events (${SQLITE_COLUMNS.join(', ')}) ${EVENT_VALUES} ${ignoreConflicts ? 'ON CONFLICT (environment, telemetry_id) DO NOTHING ' : ''}${RETURNING}`,
  reasons: `INSERT INTO event_reasons (key, seq, facet) ${fromJson(['key', 'seq', 'facet'])}`,
  newFacets: `INSERT INTO event_facets (${FACET_COLUMNS.join(', ')}) ${fromJson(FACET_COLUMNS)} ON CONFLICT DO NOTHING`,
  facetIds: `SELECT k.key AS i, f.id FROM json_each(?) AS k JOIN event_facets AS f ON ${SAME_FACET}`,
  marksFrom: 'SELECT bucket, lo, hi FROM event_time_marks WHERE environment = ? AND bucket >= ?',
  saveMarks: `INSERT INTO event_time_marks (environment, bucket, lo, hi) ${fromJson(['environment', 'bucket', 'lo', 'hi'])} ON CONFLICT (environment, bucket) DO UPDATE SET lo = excluded.lo, hi = excluded.hi`,
  eventsByKey: 'SELECT e.* FROM json_each(?) AS k JOIN events AS e ON e.environment = k.value->>0 AND e.telemetry_id = k.value->>1',
  deleteReasons: 'DELETE FROM event_reasons WHERE (key, facet, seq) IN (SELECT value->>0, value->>1, value->>2 FROM json_each(?))',
  deleteEvents: 'DELETE FROM events WHERE seq IN (SELECT value FROM json_each(?))',
  forgetMarks: 'DELETE FROM event_time_marks WHERE environment = ? AND bucket < ?',
};

function sqliteTx(conn: sqlite3.Database): EventWriteTx {
  return {
    insertEvents: (rows, ignoreConflicts) => all<Inserted>(conn, SQL.insert(ignoreConflicts), [JSON.stringify(rows.map(hexBlob))]),
    insertReasonRows: (rows) => run(conn, SQL.reasons, [JSON.stringify(rows.map((r) => [r.key, r.seq, r.facet]))]),
    async facetIds(facets) {
      const json = JSON.stringify(facets);
      await run(conn, SQL.newFacets, [json]);
      const ids: number[] = [];
      for (const r of await all<{ i: number; id: number }>(conn, SQL.facetIds, [json])) ids[r.i] = r.id;
      return ids;
    },
    marksFrom: (environment, bucket) => all<Mark>(conn, SQL.marksFrom, [environment, bucket]),
    saveMarks: (marks) => run(conn, SQL.saveMarks, [JSON.stringify(marks.map((m) => [m.environment, m.bucket, m.lo, m.hi]))]),
    eventsByKey: (keys) => all<EventRow>(conn, SQL.eventsByKey, [JSON.stringify(keys)]),
    async deleteEvents(seqs, reasonRows) {
      await run(conn, SQL.deleteReasons, [JSON.stringify(reasonRows.map((r) => [r.key, r.facet, r.seq]))]);
      await run(conn, SQL.deleteEvents, [JSON.stringify(seqs)]);
    },
    forgetMarks: (environment, beforeBucket) => run(conn, SQL.forgetMarks, [environment, beforeBucket]),
  };
}

// PostgreSQL's casts for SQLITE_COLUMNS: assignment from text needs them for all but text columns.
const PG_TYPES: Record<string, string> = { created_at: 'bigint', score: 'double precision', monitored: 'boolean', facet: 'integer' };
const pgValue = (column: string, i: number) => (column === 'explanation_z' ? `decode(v->>${i}, 'hex')` : PG_TYPES[column] ? `(v->>${i})::${PG_TYPES[column]}` : `v->>${i}`);
const PG_SQL = {
  insert: (ignoreConflicts: boolean) =>
    `INSERT INTO events (${SQLITE_COLUMNS.join(', ')}) SELECT ${SQLITE_COLUMNS.map(pgValue).join(', ')} FROM json_array_elements(?::json) AS v ${ignoreConflicts ? 'ON CONFLICT (environment, telemetry_id) DO NOTHING ' : ''}${RETURNING}`,
  reasons: 'INSERT INTO event_reasons (key, facet, seq) SELECT (v->>0)::integer, (v->>1)::integer, (v->>2)::bigint FROM json_array_elements(?::json) AS v',
  saveMarks:
    'INSERT INTO event_time_marks (environment, bucket, lo, hi) SELECT v->>0, (v->>1)::bigint, (v->>2)::bigint, (v->>3)::bigint FROM json_array_elements(?::json) AS v ON CONFLICT (environment, bucket) DO UPDATE SET lo = excluded.lo, hi = excluded.hi',
};

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
      return work({
        // As in SQLite, a batch is one JSON parameter: knex building a multi-row insert and the
        // driver binding each value cost more CPU than PostgreSQL unpacking the JSON.
        insertEvents: async (rows, ignoreConflicts) => (await trx.raw(PG_SQL.insert(ignoreConflicts), [JSON.stringify(rows.map(hexBlob))])).rows as Inserted[],
        insertReasonRows: async (rows) => void (await trx.raw(PG_SQL.reasons, [JSON.stringify(rows.map((r) => [r.key, r.facet, r.seq]))])),
        async facetIds(facets) {
          const rows = facets.map((f) => Object.fromEntries(FACET_COLUMNS.map((c, i) => [c, f[i]])));
          await trx('event_facets').insert(rows).onConflict(FACET_COLUMNS).ignore();
          const found: ({ id: number } & Record<string, string>)[] = await trx('event_facets').select('id', ...FACET_COLUMNS).whereIn(FACET_COLUMNS, facets.map((f) => [...f]));
          const byKey = new Map(found.map((r) => [FACET_COLUMNS.map((c) => r[c]).join('\u0000'), Number(r.id)]));
          return facets.map((f) => byKey.get(f.join('\u0000'))!);
        },
        marksFrom: async (environment, bucket) =>
          (await trx('event_time_marks').select('bucket', 'lo', 'hi').where('environment', environment).where('bucket', '>=', bucket)).map(
            (m: { bucket: number | string; lo: number | string; hi: number | string }) => ({ bucket: Number(m.bucket), lo: Number(m.lo), hi: Number(m.hi) }),
          ),
        saveMarks: async (marks) => void (await trx.raw(PG_SQL.saveMarks, [JSON.stringify(marks.map((m) => [m.environment, m.bucket, m.lo, m.hi]))])),
        async deleteEvents(seqs, reasonRows) {
          for (const chunk of chunks(reasonRows)) await trx('event_reasons').whereIn(['key', 'facet', 'seq'], chunk.map((r) => [r.key, r.facet, r.seq])).delete();
          for (const chunk of chunks(seqs)) await trx('events').whereIn('seq', chunk).delete();
        },
        forgetMarks: async (environment, beforeBucket) => void (await trx('event_time_marks').where('environment', environment).where('bucket', '<', beforeBucket).delete()),
        async eventsByKey(keys) {
          const rows: EventRow[] = [];
          for (const chunk of chunks(keys)) rows.push(...(await trx<EventRow>('events').whereIn(['environment', 'telemetry_id'], chunk.map((k) => [...k]))));
          return rows;
        },
      });
    });
}
