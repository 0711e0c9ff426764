import type { Knex } from 'knex';
import type { DecisionEvent } from '../api/types.js';
import { applyFilter, type EventFilter } from './eventFilter.js';
import { fromRow, toRow, type EventRow } from './eventRows.js';
import { hash32, reasonKeys, reasonRows } from './reasonIndex.js';

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
// pg_advisory_xact_lock(int, int): a class for TPS event writers, an object per schema.
const WRITER_LOCK_CLASS = 0x545053;

type Inserted = { seq: number; environment: string; telemetry_id: string };

export class KnexEventStore implements EventStore {
  private readonly postgres: boolean;
  private readonly writerLock: number;

  constructor(private readonly knex: Knex) {
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
    const row = await this.knex<EventRow>('events').where({ environment, telemetry_id: telemetryId }).first();
    return row ? fromRow(row) : undefined;
  }

  async count(environment?: string): Promise<number> {
    const q = this.knex('events').count<{ n: number | string }[]>({ n: '*' });
    if (environment) q.where({ environment });
    const row = await q.first();
    return Number(row?.n ?? 0);
  }

  /** One page of an environment's events matching the filter, in seq order. */
  async page(environment: string, filter: EventFilter, o: PageOptions): Promise<StoredEvent[]> {
    const q = this.knex.select('e.*').from('events as e');
    applyFilter(q, environment, filter);
    if (o.before !== undefined) q.where('e.seq', '<', o.before);
    if (o.after !== undefined) q.where('e.seq', '>', o.after);
    if (o.upTo !== undefined) q.where('e.seq', '<=', o.upTo);
    const rows: EventRow[] = await q.orderBy('e.seq', o.order).limit(o.limit);
    return rows.map(fromRow);
  }

  /** Events of every environment committed after `after`, oldest first: what the live stream polls. */
  async since(after: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.knex<EventRow>('events').where('seq', '>', after).orderBy('seq', 'asc').limit(limit);
    return rows.map(fromRow);
  }

  /** The highest seq committed so far (0 for an empty store). */
  async head(): Promise<number> {
    const row = await this.knex('events').max<{ m: number | string | null }[]>({ m: 'seq' }).first();
    return Number(row?.m ?? 0);
  }

  async environments(): Promise<string[]> {
    return (await this.knex('environments').select('name')).map((r: { name: string }) => r.name);
  }

  /** Deletes up to `limit` of the environment's events created before cutoffMs; returns how many. */
  async prune(environment: string, cutoffMs: number, limit: number): Promise<number> {
    return this.knex.transaction(async (trx) => {
      const rows: { seq: number; reasons: string }[] = await trx('events')
        .select('seq', 'reasons')
        .where('environment', environment)
        .where('created_at', '<', cutoffMs)
        .orderBy('created_at', 'asc')
        .limit(limit);
      if (rows.length === 0) return 0;
      if (!this.postgres) await this.deleteReasonRows(trx, environment, rows);
      const seqs = rows.map((r) => Number(r.seq));
      for (let i = 0; i < seqs.length; i += CHUNK) await trx('events').whereIn('seq', seqs.slice(i, i + CHUNK)).delete();
      return rows.length;
    });
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
    if (this.postgres) return inserted;
    const reasonsOf = new Map(events.map((e) => [keyOf(e.environment, e.telemetryId), e.reasons]));
    const rows = inserted.flatMap((r) => reasonRows(r.environment, Number(r.seq), reasonsOf.get(keyOf(r.environment, r.telemetry_id)) ?? []));
    for (let i = 0; i < rows.length; i += CHUNK) await trx('event_reasons').insert(rows.slice(i, i + CHUNK));
    return inserted;
  }
}
