import type { Knex } from 'knex';

/**
 * Time ranges as seq ranges. Events are paged by seq, but `from`/`to` bound createdAt, and an index
 * on createdAt cannot give rows in seq order: a window in the past would mean sorting it whole, or
 * walking down from the newest event past everything after it. event_time_marks keeps, per
 * environment and minute bucket of createdAt:
 *
 *   hi = the highest seq of any event in this bucket or an earlier one (a running maximum);
 *   lo = the lowest seq of any event in this bucket or a later one (a running minimum).
 *
 * So every event created before `to` has seq <= hi of the last bucket before `to`, and every event
 * created at or after `from` has seq >= lo of the first bucket from `from`: two index probes turn a
 * time range into a seq range that holds all of it (the createdAt test still applies inside). The
 * bounds are exact whatever order events arrive in, e.g. history imported after live traffic.
 *
 * Writers keep it in the same statement as the events (marksUpsertSql).
 */
export const BUCKET_MS = 60_000;

export const bucketOf = (ms: number): number => Math.floor(ms / BUCKET_MS);

/**
 * The upsert that records a batch's marks, run by the statement that inserts the batch (eventWriteTx.ts).
 * `added` is a relation (environment, created_at, seq) of the events the batch added; `bucket` is
 * the dialect's bucketOf over a column. Every added seq exceeds every stored one, so:
 *
 * - only buckets from the batch's earliest on change: the batch's own, and the stored ones after it;
 * - a bucket's lo is the stored running minimum where one exists (a stored seq is lower than any
 *   added), else the lowest added seq from that bucket on;
 * - its hi is the highest added seq up to that bucket where there is one, else the stored hi.
 *
 * For live traffic this touches one row: the current bucket's.
 */
export function marksUpsertSql(added: string, bucket: (column: string) => string): string {
  const stored = (op: '>=' | '<=', column: 'lo' | 'hi') =>
    `(SELECT m.${column} FROM event_time_marks m WHERE m.environment = t.environment AND m.bucket ${op} t.bucket ORDER BY m.bucket ${op === '>=' ? 'ASC' : 'DESC'} LIMIT 1)`;
  const batch = (op: '>=' | '<=', agg: 'min(n.lo)' | 'max(n.hi)') => `(SELECT ${agg} FROM n WHERE n.environment = t.environment AND n.bucket ${op} t.bucket)`;
  return `INSERT INTO event_time_marks (environment, bucket, lo, hi)
    WITH n AS (SELECT environment, ${bucket('created_at')} AS bucket, min(seq) AS lo, max(seq) AS hi FROM ${added} GROUP BY 1, 2),
      t AS (
        SELECT environment, bucket FROM n
        UNION
        SELECT m.environment, m.bucket FROM event_time_marks m JOIN (SELECT environment, min(bucket) AS first FROM n GROUP BY environment) f ON m.environment = f.environment AND m.bucket > f.first
      )
    SELECT t.environment, t.bucket, coalesce(${stored('>=', 'lo')}, ${batch('>=', 'min(n.lo)')}), coalesce(${batch('<=', 'max(n.hi)')}, ${stored('<=', 'hi')})
    FROM t WHERE true
    ON CONFLICT (environment, bucket) DO UPDATE SET lo = excluded.lo, hi = excluded.hi`;
}

export interface Mark {
  bucket: number;
  lo: number;
  hi: number;
}

/** Per-bucket min and max seqs → the running maximum (hi) and running minimum (lo) of timeMarks. */
function runningMarks(marks: Mark[]): Mark[] {
  const sorted = [...marks].sort((a, b) => a.bucket - b.bucket);
  let hi = -Infinity;
  const his = sorted.map((m) => (hi = Math.max(hi, m.hi)));
  let lo = Infinity;
  const los = sorted.map((_, i) => sorted[sorted.length - 1 - i]!).map((m) => (lo = Math.min(lo, m.lo))).reverse();
  return sorted.map((m, i) => ({ bucket: m.bucket, lo: los[i]!, hi: his[i]! }));
}

export interface SeqBounds {
  /** Lowest seq an event created at or after `from` can have. */
  lo?: number;
  /** Highest seq an event created before `to` can have. */
  hi?: number;
  /** No event of the environment lies in the time range. */
  empty: boolean;
}

/** The seq range holding every event of the environment created in [fromMs, toMs). */
export async function seqBounds(knex: Knex, environment: string, fromMs: number | undefined, toMs: number | undefined): Promise<SeqBounds> {
  const bounds: SeqBounds = { empty: false };
  if (toMs !== undefined) {
    const row = await knex('event_time_marks').where('environment', environment).where('bucket', '<=', bucketOf(toMs - 1)).orderBy('bucket', 'desc').first('hi');
    if (!row) return { empty: true };
    bounds.hi = Number(row.hi);
  }
  if (fromMs !== undefined) {
    const row = await knex('event_time_marks').where('environment', environment).where('bucket', '>=', bucketOf(fromMs)).orderBy('bucket', 'asc').first('lo');
    if (!row) return { empty: true };
    bounds.lo = Number(row.lo);
  }
  if (bounds.lo !== undefined && bounds.hi !== undefined && bounds.lo > bounds.hi) return { empty: true };
  return bounds;
}

/** The marks of stored events, from their per-bucket (environment, bucket, min seq, max seq): for migrating a store. */
export function runningBounds(buckets: readonly { environment: string; bucket: number | string; lo: number | string; hi: number | string }[]) {
  const byEnvironment = new Map<string, Mark[]>();
  for (const b of buckets) {
    const list = byEnvironment.get(b.environment) ?? byEnvironment.set(b.environment, []).get(b.environment)!;
    list.push({ bucket: Number(b.bucket), lo: Number(b.lo), hi: Number(b.hi) });
  }
  return [...byEnvironment].flatMap(([environment, list]) => runningMarks(list).map((m) => ({ environment, ...m })));
}
