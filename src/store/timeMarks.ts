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
 * Writers keep it in the same transaction as the events. A new seq exceeds every stored one, so a
 * batch only touches the marks from its earliest bucket on: for live traffic, the latest bucket.
 */
export const BUCKET_MS = 60_000;

export const bucketOf = (ms: number): number => Math.floor(ms / BUCKET_MS);

/** Where a writer reads and keeps marks, inside its transaction (eventWriteTx.ts). */
export interface MarkIO {
  marksFrom(environment: string, bucket: number): Promise<Mark[]>;
  saveMarks(marks: readonly (Mark & { environment: string })[]): Promise<void>;
}

/**
 * Records a batch's (environment, createdAt, seq); call inside the writing transaction, after the
 * insert. Live traffic touches one bucket, so this is one small read and one upsert per batch.
 */
export async function markBatch(io: MarkIO, rows: readonly { environment: string; createdAt: number; seq: number }[]): Promise<void> {
  const byEnvironment = new Map<string, Map<number, Mark>>();
  for (const r of rows) {
    const buckets = byEnvironment.get(r.environment) ?? byEnvironment.set(r.environment, new Map()).get(r.environment)!;
    const bucket = bucketOf(r.createdAt);
    const mark = buckets.get(bucket);
    if (mark) {
      mark.lo = Math.min(mark.lo, r.seq);
      mark.hi = Math.max(mark.hi, r.seq);
    } else buckets.set(bucket, { bucket, lo: r.seq, hi: r.seq });
  }
  for (const [environment, batch] of byEnvironment) {
    let first = Infinity;
    for (const bucket of batch.keys()) first = Math.min(first, bucket);
    // Buckets before `first` keep their marks: the batch's seqs are higher than any stored one, so
    // they change neither an earlier running maximum's reach nor an earlier running minimum.
    const stored = await io.marksFrom(environment, first);
    const changed = changedMarks(stored, batch.values()).map((m) => ({ environment, ...m }));
    if (changed.length) await io.saveMarks(changed);
  }
}

/** The marks that differ once a batch's per-bucket seqs are merged into the stored ones. */
function changedMarks(stored: readonly Mark[], batch: Iterable<Mark>): Mark[] {
  const merged = new Map<number, Mark>(stored.map((m) => [m.bucket, { ...m }]));
  for (const m of batch) {
    const had = merged.get(m.bucket);
    merged.set(m.bucket, had ? { bucket: m.bucket, lo: Math.min(had.lo, m.lo), hi: Math.max(had.hi, m.hi) } : { ...m });
  }
  const before = new Map(stored.map((m) => [m.bucket, m]));
  return runningMarks([...merged.values()]).filter((m) => before.get(m.bucket)?.lo !== m.lo || before.get(m.bucket)?.hi !== m.hi);
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
