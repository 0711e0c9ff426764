import type { Knex } from 'knex';
import type { DecisionEvent } from '../api/types.js';
import { filteredEvents, predicateCount, type EventFilter } from './eventFilter.js';
import { fromRow, rowValues, type EventRow } from './eventRows.js';
import { postgresEventWriter, sqliteEventWriter, type EventWriter, type EventWriteTx, type Inserted } from './eventWriteTx.js';
import { encodeExplanation } from './explanationCodec.js';
import type { ExplanationEncoder } from './explanationEncoder.js';
import { FacetIds, facetOf, hasFacetFilter, matchingFacets } from './facets.js';
import { reasonKeys, reasonRows } from './reasonIndex.js';
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

/** What a batch wrote; `remember` keeps its facet ids once the transaction has committed. */
interface Written {
  inserted: Inserted[];
  remember(): void;
}

export const keyOf = (environment: string, telemetryId: string): string => `${environment}\u0000${telemetryId}`;

// SQLite caps bound parameters and compound SELECT terms (500) per statement.
const CHUNK = 500;
// Facet ranges per statement in readFacets: SQLite allows 500 terms in a compound SELECT.
const ARMS = 200;
// Seqs a multi-predicate page reads in order before it changes plan (see page()).
const PROBE_WINDOW = 20_000;

export class KnexEventStore implements EventStore {
  private readonly postgres: boolean;
  private readonly writer: EventWriter;
  private readonly facetIds = new FacetIds();
  /** Deflates explanations off the main thread; without one, they are deflated in line. */
  private readonly encoder?: ExplanationEncoder;

  private readonly probeWindow: number;
  /** Reads that may take a while go here (Database.reader), writes and their reads to knex. */
  private readonly reader: Knex;

  constructor(
    private readonly knex: Knex,
    options: { probeWindow?: number; reader?: Knex; encoder?: ExplanationEncoder } = {},
  ) {
    this.encoder = options.encoder;
    this.probeWindow = options.probeWindow ?? PROBE_WINDOW;
    this.reader = options.reader ?? knex;
    this.postgres = knex.client.config.client === 'pg';
    this.writer = this.postgres ? postgresEventWriter(knex) : sqliteEventWriter(knex);
  }

  /** Stores a batch in one transaction; a clash with a stored telemetryId fails the whole batch. */
  async insertBatch(events: readonly EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    const explanations = await this.encode(events);
    const written = await this.writer((tx) => this.writeRows(tx, events, explanations, false));
    written.remember();
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
    const explanations = await this.encode(candidates);
    const result = await this.writer(async (tx) => {
      const written = await this.writeRows(tx, candidates, explanations, true);
      const stored = new Set(written.inserted.map((r) => keyOf(r.environment, r.telemetry_id)));
      const inserted = events.map((e, i) => {
        const key = keyOf(e.environment, e.telemetryId);
        return first.get(key) === i && stored.has(key);
      });
      const taken = events.filter((_, i) => !inserted[i]).map((e) => [e.environment, e.telemetryId] as const);
      const existing = new Map<string, StoredEvent>();
      for (const row of await tx.eventsByKey(taken)) existing.set(keyOf(row.environment, row.telemetry_id), fromRow(row));
      return { written, inserted, existing };
    });
    result.written.remember();
    return { inserted: result.inserted, existing: result.existing };
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
    let facets: number[] | undefined;
    if (hasFacetFilter(filter)) {
      // The head before the facets: an event committed after the lookup may be of a facet it missed,
      // so the page stops below it.
      high = Math.min(high ?? Infinity, await this.head());
      facets = await matchingFacets(this.reader, environment, filter);
      if (facets.length === 0) return [];
    }
    if (filter.fromMs !== undefined || filter.toMs !== undefined) {
      const bounds = await seqBounds(this.reader, environment, filter.fromMs, filter.toMs);
      if (bounds.empty) return [];
      if (bounds.lo !== undefined) low = Math.max(low ?? 0, bounds.lo);
      if (bounds.hi !== undefined) high = Math.min(high ?? Infinity, bounds.hi);
    }
    if (low !== undefined && high !== undefined && low > high) return [];
    if (facets && filter.actorId === undefined && filter.resourceId === undefined && filter.reason === undefined) {
      return this.readFacets(environment, filter, facets, low, high, o.order, o.limit);
    }
    const read = (from: number | undefined, to: number | undefined, limit: number, ordered: boolean) => this.read(environment, filter, facets, from, to, o.order, limit, ordered);
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

  private async read(environment: string, filter: EventFilter, facets: number[] | undefined, low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number, ordered: boolean): Promise<StoredEvent[]> {
    const { q, seq } = filteredEvents(this.reader, environment, filter, ordered, facets);
    if (low !== undefined) q.where(seq, '>=', low);
    if (high !== undefined && high !== Infinity) q.where(seq, '<=', high);
    // `seq + 0` keeps the planner from walking an index in seq order: it must find the matches first.
    if (ordered) q.orderBy(seq, order);
    else q.orderByRaw(`${seq} + 0 ${order}`);
    const rows: EventRow[] = await q.limit(limit);
    return rows.map(fromRow);
  }

  /**
   * A page of facet filters alone: each facet's (facet, seq) range yields its first `limit` seqs in
   * order, the ranges are merged, and only the page's rows are fetched. The cost is the number of
   * matching facets times the page size, whatever the store holds.
   */
  private async readFacets(environment: string, f: EventFilter, facets: number[], low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number): Promise<StoredEvent[]> {
    const direction = order === 'asc' ? 'ASC' : 'DESC';
    const range: string[] = [];
    const bindings: number[] = [];
    const bound = (sql: string, value: number | undefined) => {
      if (value === undefined || value === Infinity) return;
      range.push(sql);
      bindings.push(value);
    };
    bound('seq >= ?', low);
    bound('seq <= ?', high);
    bound('created_at >= ?', f.fromMs);
    bound('created_at < ?', f.toMs);
    const arm = (i: number) => `SELECT seq FROM (SELECT seq FROM events WHERE ${['facet = ?', ...range].join(' AND ')} ORDER BY seq ${direction} LIMIT ?) AS a${i}`;
    let seqs: number[] = [];
    for (let i = 0; i < facets.length; i += ARMS) {
      const chunk = facets.slice(i, i + ARMS);
      const sql = `${chunk.map((_, j) => arm(j)).join(' UNION ALL ')} ORDER BY seq ${direction} LIMIT ?`;
      const result = await this.reader.raw(sql, [...chunk.flatMap((facet) => [facet, ...bindings, limit]), limit]);
      seqs = seqs.concat((this.postgres ? result.rows : result).map((r: { seq: number | string }) => Number(r.seq)));
    }
    seqs = seqs.sort((a, b) => (order === 'asc' ? a - b : b - a)).slice(0, limit);
    if (seqs.length === 0) return [];
    const rows: EventRow[] = await this.reader<EventRow>('events').where('environment', environment).whereIn('seq', seqs).orderBy('seq', order);
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

  /** Inserts events with their reason keys (reasonIndex.ts); returns the rows actually inserted. */
  /** Before the transaction opens, so it is never held open while explanations are deflated. */
  private encode(events: readonly EventRecord[]): Promise<Buffer[]> {
    if (this.encoder) return this.encoder.encode(events.map((e) => e.explanation));
    return Promise.resolve(events.map((e) => encodeExplanation(e.explanation)));
  }

  private async writeRows(tx: EventWriteTx, events: readonly EventRecord[], explanations: readonly Buffer[], ignoreConflicts: boolean): Promise<Written> {
    const facets = events.map(facetOf);
    const known = this.facetIds.known(facets);
    const missing = facets.filter((_, i) => known[i] === undefined);
    const found = missing.length ? await tx.facetIds(missing) : [];
    let next = 0;
    const ids = known.map((id) => id ?? found[next++]!);
    const values = this.postgres
      ? (e: EventRecord, i: number) => [...rowValues(e, explanations[i]), ids[i], reasonKeys(e.environment, e.reasons)]
      : (e: EventRecord, i: number) => [...rowValues(e, explanations[i]), ids[i]];
    const inserted = await tx.insertEvents(events.map(values), ignoreConflicts);
    const byKey = new Map(events.map((e, i) => [keyOf(e.environment, e.telemetryId), { e, facet: ids[i]! }]));
    await markBatch(
      tx,
      inserted.map((r) => ({ environment: r.environment, seq: Number(r.seq), createdAt: byKey.get(keyOf(r.environment, r.telemetry_id))!.e.createdAt })),
    );
    if (!this.postgres) {
      await tx.insertReasonRows(
        inserted.flatMap((r) => {
          const { e, facet } = byKey.get(keyOf(r.environment, r.telemetry_id))!;
          return reasonRows(r.environment, Number(r.seq), e.reasons).map((row) => ({ ...row, facet }));
        }),
      );
    }
    return { inserted, remember: () => this.facetIds.remember(facets, ids) };
  }
}
