import type { Knex } from 'knex';
import type { DecisionEvent } from '../api/types.js';
import { filteredEvents, predicateCount, type EventFilter } from './eventFilter.js';
import { fromRow, toRow, type EventRow } from './eventRows.js';
import { hash32, reasonKeys, reasonRows } from './reasonIndex.js';
import { forgetBefore, markBatch, seqBounds } from './timeMarks.js';

export { fromRow, toRow, type EventRow } from './eventRows.js';

/** A decision event as written: DecisionEvent with its time as epoch milliseconds. */
export interface EventRecord extends Omit<DecisionEvent, 'createdAt'> {
  createdAt: number;
  monitored?: boolean;
}

/** seq is the store's order of commit: the Decision Logs page and the stream resume by it. */
export interface StoredEvent extends DecisionEvent {
  seq: number;
  monitored: boolean;
}

/** Where decision events live. Writes come in batches: one transaction per batch (group commit). */
export interface EventStore {
  insertBatch(events: readonly EventRecord[]): Promise<void>;
  get(environment: string, telemetryId: string): Promise<StoredEvent | undefined>;
  count(environment?: string): Promise<number>;
}

/** What insertNew did with each record of its batch. */
export interface InsertNewResult {
  /** inserted[i]: record i was stored by this call. */
  inserted: boolean[];
  /** The stored event under each key (keyOf) that some record of the batch did not insert. */
  existing: Map<string, StoredEvent>;
}

export interface PageOptions {
  limit: number;
  /** desc: newest first, seq < before. asc: oldest first, seq > after and seq <= upTo. */
  order: 'asc' | 'desc';
  before?: number;
  after?: number;
  upTo?: number;
}

export const keyOf = (environment: string, telemetryId: string): string => `${environment}\u0000${telemetryId}`;

// SQLite caps bound parameters and compound SELECT terms (500) per statement.
const CHUNK = 500;
// Seqs a multi-predicate page reads in order before it changes plan (see page()).
const PROBE_WINDOW = 20_000;
// pg_advisory_xact_lock(int, int): a class for TPS event writers, an object per schema.
const WRITER_LOCK_CLASS = 0x545053;

type Inserted = { seq: number; environment: string; telemetry_id: string };

export class KnexEventStore implements EventStore {
  private readonly postgres: boolean;
  private readonly writerLock: number;

  private readonly probeWindow: number;
  /** Reads that may take a while go here (Database.reader), writes and their reads to knex. */
  private readonly reader: Knex;

  constructor(
    private readonly knex: Knex,
    options: { probeWindow?: number; reader?: Knex } = {},
  ) {
    this.probeWindow = options.probeWindow ?? PROBE_WINDOW;
    this.reader = options.reader ?? knex;
    const config = knex.client.config as { client: string; searchPath?: string[] };
    this.postgres = config.client === 'pg';
    this.writerLock = hash32(config.searchPath?.[0] ?? 'public');
  }

  /** Stores a batch in one transaction; a clash with a stored telemetryId fails the whole batch. */
  async insertBatch(events: readonly EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    await this.knex.transaction(async (trx) => {
      await this.lockWriters(trx);
      await this.writeRows(trx, events, false);
    });
  }

  /**
   * Stores the records whose (environment, telemetryId) is new, in one transaction, and returns the
   * stored event of every key that was already taken, so the caller can tell a repeat from a
   * conflict. The unique key decides, so concurrent callers (even in other processes) store a
   * telemetryId exactly once. Within the batch the first record of a key wins.
   */
  async insertNew(events: readonly EventRecord[]): Promise<InsertNewResult> {
    const first = new Map<string, number>();
    events.forEach((e, i) => {
      const key = keyOf(e.environment, e.telemetryId);
      if (!first.has(key)) first.set(key, i);
    });
    const candidates = [...first.values()].map((i) => events[i]!);
    return this.knex.transaction(async (trx) => {
      await this.lockWriters(trx);
      const stored = new Set((await this.writeRows(trx, candidates, true)).map((r) => keyOf(r.environment, r.telemetry_id)));
      const inserted = events.map((e, i) => {
        const key = keyOf(e.environment, e.telemetryId);
        return first.get(key) === i && stored.has(key);
      });
      const taken = events.filter((_, i) => !inserted[i]).map((e) => [e.environment, e.telemetryId]);
      const existing = new Map<string, StoredEvent>();
      for (let i = 0; i < taken.length; i += CHUNK) {
        const rows = await trx<EventRow>('events').whereIn(['environment', 'telemetry_id'], taken.slice(i, i + CHUNK));
        for (const row of rows) existing.set(keyOf(row.environment, row.telemetry_id), fromRow(row));
      }
      return { inserted, existing };
    });
  }

  async get(environment: string, telemetryId: string): Promise<StoredEvent | undefined> {
    const row = await this.reader<EventRow>('events').where({ environment, telemetry_id: telemetryId }).first();
    return row ? fromRow(row) : undefined;
  }

  async count(environment?: string): Promise<number> {
    const q = this.knex('events').count<{ n: number | string }[]>({ n: '*' });
    if (environment) q.where({ environment });
    const row = await q.first();
    return Number(row?.n ?? 0);
  }

  /**
   * One page of an environment's events matching the filter, in seq order. Every filter has an
   * index that yields its events in seq order, so a page is one ordered index range; a time range
   * narrows it to the seqs the range can hold (timeMarks.ts).
   *
   * In PostgreSQL two or more predicates are different: its planner, seeing LIMIT, walks one index
   * in order and tests the rest row by row, which is quick when matches are common and a walk
   * through the whole history when they are rare or absent. So such a page first reads in order only
   * the probeWindow seqs nearest its start; if that does not fill it, the rest is read by an
   * unordered plan (bitmaps of its indexes) and sorted: cheap exactly because the matches are rare.
   */
  async page(environment: string, filter: EventFilter, o: PageOptions): Promise<StoredEvent[]> {
    let low = o.after === undefined ? undefined : o.after + 1;
    let high = o.before !== undefined ? o.before - 1 : o.upTo;
    if (filter.fromMs !== undefined || filter.toMs !== undefined) {
      const bounds = await seqBounds(this.reader, environment, filter.fromMs, filter.toMs);
      if (bounds.empty) return [];
      if (bounds.lo !== undefined) low = Math.max(low ?? 0, bounds.lo);
      if (bounds.hi !== undefined) high = Math.min(high ?? Infinity, bounds.hi);
    }
    if (low !== undefined && high !== undefined && low > high) return [];
    const read = (from: number | undefined, to: number | undefined, limit: number, ordered: boolean) => this.read(environment, filter, from, to, o.order, limit, ordered);
    // SQLite walks the index it picked (filteredEvents); PostgreSQL needs no second plan for one predicate.
    if (!this.postgres || (predicateCount(filter) < 2 && filter.reason === undefined)) return read(low, high, o.limit, true);

    if (o.order === 'desc') {
      const top = high ?? (await this.head());
      const edge = top - this.probeWindow + 1;
      const near = await read(Math.max(low ?? 0, edge), top, o.limit, true);
      if (near.length === o.limit || edge <= (low ?? 0)) return near;
      return near.concat(await read(low, edge - 1, o.limit - near.length, false));
    }
    const edge = (low ?? 0) + this.probeWindow - 1;
    const near = await read(low, high === undefined ? edge : Math.min(high, edge), o.limit, true);
    if (near.length === o.limit || (high !== undefined && edge >= high)) return near;
    return near.concat(await read(edge + 1, high, o.limit - near.length, false));
  }

  private async read(environment: string, filter: EventFilter, low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number, ordered: boolean): Promise<StoredEvent[]> {
    const { q, seq } = filteredEvents(this.reader, environment, filter, ordered);
    if (low !== undefined) q.where(seq, '>=', low);
    if (high !== undefined && high !== Infinity) q.where(seq, '<=', high);
    // `seq + 0` keeps the planner from walking an index in seq order: it must find the matches first.
    if (ordered) q.orderBy(seq, order);
    else q.orderByRaw(`${seq} + 0 ${order}`);
    const rows: EventRow[] = await q.limit(limit);
    return rows.map(fromRow);
  }

  /** Events of every environment committed after `after`, oldest first: what the live stream polls. */
  async since(after: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.reader<EventRow>('events').where('seq', '>', after).orderBy('seq', 'asc').limit(limit);
    return rows.map(fromRow);
  }

  /** The highest seq committed so far (0 for an empty store). */
  async head(): Promise<number> {
    const row = await this.reader('events').max<{ m: number | string | null }[]>({ m: 'seq' }).first();
    return Number(row?.m ?? 0);
  }

  async environments(): Promise<string[]> {
    return (await this.knex('environments').select('name')).map((r: { name: string }) => r.name);
  }

  /**
   * Deletes up to `limit` of the environment's oldest events created before cutoffMs; returns how
   * many. Once none are left, their time marks go too.
   */
  async prune(environment: string, cutoffMs: number, limit: number): Promise<number> {
    const bounds = await seqBounds(this.knex, environment, undefined, cutoffMs);
    if (bounds.empty) return 0;
    const deleted = await this.knex.transaction(async (trx) => {
      const rows: { seq: number; reasons: string }[] = await trx('events')
        .select('seq', 'reasons')
        .where('environment', environment)
        .where('seq', '<=', bounds.hi!)
        .where('created_at', '<', cutoffMs)
        .orderBy('seq', 'asc')
        .limit(limit);
      if (rows.length === 0) return 0;
      if (!this.postgres) await this.deleteReasonRows(trx, environment, rows);
      const seqs = rows.map((r) => Number(r.seq));
      for (let i = 0; i < seqs.length; i += CHUNK) await trx('events').whereIn('seq', seqs.slice(i, i + CHUNK)).delete();
      return rows.length;
    });
    if (deleted < limit) await forgetBefore(this.knex, environment, cutoffMs);
    return deleted;
  }

  /** SQLite keeps reasons in event_reasons (reasonIndex.ts); they go with their events. */
  private async deleteReasonRows(trx: Knex.Transaction, environment: string, rows: { seq: number; reasons: string }[]): Promise<void> {
    const byKey = new Map<number, number[]>();
    for (const r of rows) {
      for (const { key, seq } of reasonRows(environment, Number(r.seq), JSON.parse(r.reasons) as string[])) (byKey.get(key) ?? byKey.set(key, []).get(key)!).push(seq);
    }
    for (const [key, seqs] of byKey) {
      for (let i = 0; i < seqs.length; i += CHUNK) await trx('event_reasons').where({ key }).whereIn('seq', seqs.slice(i, i + CHUNK)).delete();
    }
  }

  /**
   * PostgreSQL hands out seq before commit, so two writers could commit out of seq order and a
   * stream reader that already passed seq N would never see N-1. Event writers therefore take one
   * transaction-scoped lock: seq order is commit order. (SQLite has a single writer anyway.) Group
   * commit makes this one lock per batch, not per event.
   */
  private async lockWriters(trx: Knex.Transaction): Promise<void> {
    if (this.postgres) await trx.raw('select pg_advisory_xact_lock(?, ?)', [WRITER_LOCK_CLASS, this.writerLock]);
  }

  /** Inserts events with their reason keys (reasonIndex.ts); returns the rows actually inserted. */
  private async writeRows(trx: Knex.Transaction, events: readonly EventRecord[], ignoreConflicts: boolean): Promise<Inserted[]> {
    const inserted: Inserted[] = [];
    const row = this.postgres ? (e: EventRecord) => ({ ...toRow(e), reason_keys: reasonKeys(e.environment, e.reasons) }) : toRow;
    for (let i = 0; i < events.length; i += CHUNK) {
      const q = trx('events').insert(events.slice(i, i + CHUNK).map(row));
      if (ignoreConflicts) q.onConflict(['environment', 'telemetry_id']).ignore();
      inserted.push(...((await q.returning(['seq', 'environment', 'telemetry_id'])) as Inserted[]));
    }
    const byKey = new Map(events.map((e) => [keyOf(e.environment, e.telemetryId), e]));
    await markBatch(
      trx,
      inserted.map((r) => ({ environment: r.environment, seq: Number(r.seq), createdAt: byKey.get(keyOf(r.environment, r.telemetry_id))!.createdAt })),
    );
    if (this.postgres) return inserted;
    const rows = inserted.flatMap((r) => reasonRows(r.environment, Number(r.seq), byKey.get(keyOf(r.environment, r.telemetry_id))!.reasons));
    for (let i = 0; i < rows.length; i += CHUNK) await trx('event_reasons').insert(rows.slice(i, i + CHUNK));
    return inserted;
  }
}
