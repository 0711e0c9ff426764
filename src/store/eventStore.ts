import type { Knex } from 'knex';
import type { DecisionEvent, UnreadableDecisionEvent } from '../api/types.js';
import { safeError, type Logger } from '../http/logger.js';
import { filteredEvents, predicateCount, type EventFilter } from './eventFilter.js';
import type { Database } from './db.js';
import { fromRow, keyOf, readRow, type EventRow } from './eventRows.js';
import { postgresEventWriter, sqliteEventWriter, type EventWriter } from './eventWriteTx.js';
import { EventWrites, type PreparedEvent } from './eventWrites.js';
import { facetIdsIn, hasFacetFilter, matchingFacets, type FacetIdsIn } from './facets.js';
import { chunkOf, chunkStart, idChunkSeqsSql } from './idChunks.js';
import { hasReason, reasonKey } from './reasonIndex.js';
import { seqBounds } from './timeMarks.js';

export { fromRow, keyOf, toRow, type EventRow } from './eventRows.js';
export { prepareEvent, type PreparedEvent } from './eventWrites.js';

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

/** An event as page(), since() and find() give it: its explanation may be unreadable (readRow). */
export type ReadEvent = StoredEvent | (Omit<StoredEvent, 'explanation'> & Pick<UnreadableDecisionEvent, 'explanation' | 'explanationUnreadable'>);

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
  /**
   * Under each key (keyOf) that some record of the batch did not insert: the stored event, or the
   * batch's own record where an earlier record of the batch stored the key.
   */
  existing: Map<string, StoredEvent | EventRecord>;
  /**
   * Under each key whose stored event could not be read back (a row this version cannot decode):
   * why. The batch is committed by then, so this fails only that key's records.
   */
  unreadable: Map<string, unknown>;
}

export interface PageOptions {
  limit: number;
  /** desc: newest first, seq < before. asc: oldest first, seq > after and seq <= upTo. */
  order: 'asc' | 'desc';
  before?: number;
  after?: number;
  upTo?: number;
}

// Ranges per statement in readRanges: SQLite allows 500 terms in a compound SELECT.
const ARMS = 200;
// Chunks an identifier's first read probes (readChunks), and the most one read probes.
const FIRST_CHUNKS = 4;
const MAX_CHUNKS = 1024;
// Seqs a multi-predicate page reads in order before it changes plan (see page()).
const PROBE_WINDOW = 20_000;
// Unreadable events already logged, at most this many remembered: each is logged once, not at every read.
const LOGGED_UNREADABLE = 10_000;

export class KnexEventStore implements EventStore {
  private readonly postgres: boolean;
  private readonly knex: Knex;
  /** Reads that may take a while go here (Database.reader), writes and their reads to knex. */
  private readonly reader: Knex;
  private readonly writes: EventWrites;
  private readonly probeWindow: number;
  /** The highest seq known committed (head(), pages read): seqs only grow, so a bound at or below it needs no head() to clamp. */
  private knownHead = 0;
  private readonly logger: Pick<Logger, 'warn'> | undefined;
  private readonly loggedUnreadable = new Set<string>();

  /**
   * `commits`: where the events' commits go instead of this store's own writer (a cluster worker's,
   * src/cluster/eventCommits.ts). `logger`: told of each event whose explanation cannot be read.
   */
  constructor(db: Database, options: { probeWindow?: number; commits?: (local: EventWriter) => EventWriter; logger?: Pick<Logger, 'warn'> } = {}) {
    this.logger = options.logger;
    this.knex = db.knex;
    this.reader = db.reader;
    this.postgres = db.dialect === 'postgres';
    this.probeWindow = options.probeWindow ?? PROBE_WINDOW;
    const writer = this.postgres ? postgresEventWriter(db.knex) : sqliteEventWriter(db.knex);
    this.writes = new EventWrites(options.commits ? options.commits(writer) : writer);
  }

  /** Stores a batch in one transaction; a clash with a stored telemetryId fails the whole batch. */
  insertBatch(events: readonly EventRecord[]): Promise<void> {
    return this.writes.insertBatch(events);
  }

  /** insertBatch for events already prepared (prepareEvent): the evaluate path's group commit. */
  insertPrepared(events: readonly PreparedEvent[]): Promise<void> {
    return this.writes.insertPrepared(events);
  }

  /** See EventWrites.insertNew. */
  insertNew(events: readonly EventRecord[]): Promise<InsertNewResult> {
    return this.writes.insertNew(events);
  }

  /** The event; throws when its explanation cannot be decoded (find() answers it marked instead). */
  async get(environment: string, telemetryId: string): Promise<StoredEvent | undefined> {
    const row = await this.row(environment, telemetryId);
    return row ? fromRow(row) : undefined;
  }

  /** The event as GET /api/events/{telemetryId} shows it: an unreadable explanation null and marked (readRow). */
  async find(environment: string, telemetryId: string): Promise<ReadEvent | undefined> {
    const row = await this.row(environment, telemetryId);
    return row ? this.eventOf(row) : undefined;
  }

  private row(environment: string, telemetryId: string): Promise<EventRow | undefined> {
    return this.reader<EventRow>('events').where({ environment, telemetry_id: telemetryId }).first();
  }

  /** A row read for the Decision Logs or the stream: an unreadable explanation is null and marked (readRow), never a failed read. */
  private readonly eventOf = (row: EventRow): ReadEvent => readRow(row, this.unreadable);

  /** Logged once per event (its ids and the format byte: nothing of its content). */
  private readonly unreadable = (row: EventRow, err: unknown): void => {
    const key = keyOf(row.environment, row.telemetry_id);
    if (this.loggedUnreadable.has(key)) return;
    if (this.loggedUnreadable.size >= LOGGED_UNREADABLE) this.loggedUnreadable.clear();
    this.loggedUnreadable.add(key);
    const format = row.explanation_z ? (row.explanation_z[0] ?? null) : 'json';
    this.logger?.warn({ telemetryId: row.telemetry_id, environment: row.environment, format, err: safeError(err, { message: false }) }, "an event's stored explanation cannot be read; it is answered with explanation null");
  };

  async count(environment?: string): Promise<number> {
    const q = this.knex('events').count<{ n: number | string }[]>({ n: '*' });
    if (environment) q.where({ environment });
    const row = await q.first();
    return Number(row?.n ?? 0);
  }

  /**
   * One page of an environment's events matching the filter, in seq order. A time range narrows it
   * to the seqs the range can hold (timeMarks.ts). Facet and reason filters are read as merged
   * ordered ranges (readRanges); an identifier's filter walks that identifier's index: in SQLite
   * chunk by chunk (readChunks), in PostgreSQL as one range (read).
   *
   * In PostgreSQL an identifier with other predicates is different: its planner, seeing LIMIT, walks one index
   * in order and tests the rest row by row, which is quick when matches are common and a walk
   * through the whole history when they are rare or absent. So such a page first reads in order only
   * the probeWindow seqs nearest its start; if that does not fill it, the rest is read by an
   * unordered plan (bitmaps of its indexes) and sorted: cheap exactly because the matches are rare.
   */
  async page(environment: string, filter: EventFilter, o: PageOptions): Promise<ReadEvent[]> {
    const rows = await this.pageRows(environment, filter, o);
    for (const r of rows) if (r.seq > this.knownHead) this.knownHead = r.seq;
    return rows;
  }

  private async pageRows(environment: string, filter: EventFilter, o: PageOptions): Promise<ReadEvent[]> {
    let low = o.after === undefined ? undefined : o.after + 1;
    let high = o.before !== undefined ? o.before - 1 : o.upTo;
    const byFacet = hasFacetFilter(filter) || filter.reason !== undefined;
    // A cursor may be past the head (retention deleted its events): a bound past it would have
    // readChunks walk empty chunks up to it, a million seqs per query. Facet filters need the head in any case: an event
    // committed after their lookup may be of a facet it missed, so the page stops below it.
    if (high !== undefined || byFacet) high = await this.belowHead(high);
    let facets: number[] | undefined;
    if (byFacet) {
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
    if (facets && filter.actorId === undefined && filter.resourceId === undefined) return this.readRanges(environment, filter, facets, low, high, o.order, o.limit);
    const onlyFacets = facets && hasFacetFilter(filter) ? facetIdsIn(this.reader, environment, filter, facets) : undefined;
    const read = (from: number | undefined, to: number | undefined, limit: number, ordered: boolean) => this.read(environment, filter, onlyFacets, from, to, o.order, limit, ordered);
    if (!this.postgres) {
      const byId = filter.actorId !== undefined || filter.resourceId !== undefined;
      return byId ? this.readChunks(environment, filter, onlyFacets, low, high, o.order, o.limit) : read(low, high, o.limit, true);
    }
    // PostgreSQL needs no second plan for one predicate.
    if (predicateCount(filter) < 2 && filter.reason === undefined) return read(low, high, o.limit, true);

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

  private async read(environment: string, filter: EventFilter, facets: FacetIdsIn | undefined, low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number, ordered: boolean): Promise<ReadEvent[]> {
    const q = filteredEvents(this.reader, environment, filter, facets);
    if (low !== undefined) q.where('e.seq', '>=', low);
    if (high !== undefined && high !== Infinity) q.where('e.seq', '<=', high);
    // `seq + 0` keeps the planner from walking an index in seq order: it must find the matches first.
    if (ordered) q.orderBy('e.seq', order);
    else q.orderByRaw(`e.seq + 0 ${order}`);
    const rows: EventRow[] = await q.limit(limit);
    return rows.map(this.eventOf);
  }

  /**
   * A page of facet and reason filters (no identifier): each matching facet's range, in events'
   * (facet, seq) index or, with a reason, in event_reasons' (key, facet, seq), yields its first
   * `limit` seqs in order; the ranges are merged and only the page's rows are fetched. The cost is
   * the number of matching facets times the page size, whatever the store holds.
   *
   * The fetch checks the rest: the stored reasons (a reason key is a hash) and the time range (a
   * reason range knows only seqs). Should that drop rows, the ranges are read on past them.
   */
  private async readRanges(environment: string, f: EventFilter, facets: number[], low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number): Promise<ReadEvent[]> {
    const direction = order === 'asc' ? 'ASC' : 'DESC';
    const reason = f.reason === undefined ? undefined : reasonKey(environment, f.reason);
    const page: ReadEvent[] = [];
    for (;;) {
      const range: string[] = [];
      const bindings: number[] = [];
      const bound = (sql: string, value: number | undefined) => {
        if (value === undefined || value === Infinity) return;
        range.push(sql);
        bindings.push(value);
      };
      bound('seq >= ?', low);
      bound('seq <= ?', high);
      if (reason === undefined) {
        bound('created_at >= ?', f.fromMs);
        bound('created_at < ?', f.toMs);
      }
      const from = reason === undefined ? 'events WHERE facet = ?' : 'event_reasons WHERE key = ? AND facet = ?';
      const arm = (i: number) => `SELECT seq FROM (SELECT seq FROM ${from}${range.map((r) => ` AND ${r}`).join('')} ORDER BY seq ${direction} LIMIT ?) AS a${i}`;
      const want = limit - page.length;
      let seqs: number[] = [];
      for (let i = 0; i < facets.length; i += ARMS) {
        const chunk = facets.slice(i, i + ARMS);
        const sql = `${chunk.map((_, j) => arm(j)).join(' UNION ALL ')} ORDER BY seq ${direction} LIMIT ?`;
        const args = chunk.flatMap((facet) => [...(reason === undefined ? [] : [reason]), facet, ...bindings, want]);
        seqs = seqs.concat(await this.rangeSeqs(sql, [...args, want]));
      }
      seqs = seqs.sort((a, b) => (order === 'asc' ? a - b : b - a)).slice(0, want);
      if (seqs.length === 0) return page;
      const q = this.reader<EventRow>('events').where('environment', environment).whereIn('seq', seqs).orderBy('seq', order);
      if (f.reason !== undefined) hasReason(q, f.reason);
      if (f.fromMs !== undefined) q.where('created_at', '>=', f.fromMs);
      if (f.toMs !== undefined) q.where('created_at', '<', f.toMs);
      page.push(...(await q).map(this.eventOf));
      if (page.length === limit || seqs.length < want) return page;
      if (order === 'asc') low = seqs[seqs.length - 1]! + 1;
      else high = seqs[seqs.length - 1]! - 1;
    }
  }

  /**
   * SQLite: a page of an identifier's events, with any other filter (idChunks.ts). The identifier's
   * chunks are probed from the page's start, a few at first, then as many as the matches found so
   * far say the rest of the page needs, twice over (sixteen times as many while none is found); the
   * page's rows are fetched with the other filters tested on them, and should those drop rows the
   * walk goes on past them. A frequent identifier fills its page from the first chunks; a rare one
   * costs an index probe per chunk of the range.
   */
  private async readChunks(environment: string, f: EventFilter, facets: FacetIdsIn | undefined, low: number | undefined, high: number | undefined, order: 'asc' | 'desc', limit: number): Promise<ReadEvent[]> {
    const [column, id] = f.actorId !== undefined ? (['actor_id', f.actorId] as const) : (['resource_id', f.resourceId!] as const);
    const sql = idChunkSeqsSql(column, order);
    let lo = low ?? 0;
    let hi = high === undefined || high === Infinity ? await this.head() : high;
    const page: ReadEvent[] = [];
    let probed = 0;
    for (let span = FIRST_CHUNKS; lo <= hi; ) {
      const [first, last] = order === 'desc' ? [Math.max(chunkOf(lo), chunkOf(hi) - span + 1), chunkOf(hi)] : [chunkOf(lo), Math.min(chunkOf(hi), chunkOf(lo) + span - 1)];
      const chunks = JSON.stringify(Array.from({ length: last - first + 1 }, (_, i) => first + i));
      const want = limit - page.length;
      const seqs = ((await this.reader.raw(sql, [chunks, environment, id, lo, hi, want])) as { seq: number }[]).map((r) => r.seq);
      if (seqs.length > 0) page.push(...(await filteredEvents(this.reader, environment, f, facets).whereIn('e.seq', seqs).orderBy('e.seq', order)).map(this.eventOf));
      if (page.length === limit) return page;
      // A full read may have left more in these chunks; a short one has read them all.
      const full = seqs.length === want;
      if (order === 'desc') hi = full ? seqs[seqs.length - 1]! - 1 : chunkStart(first) - 1;
      else lo = full ? seqs[seqs.length - 1]! + 1 : chunkStart(last + 1);
      probed += last - first + 1;
      span = Math.min(MAX_CHUNKS, page.length > 0 ? Math.ceil((2 * (limit - page.length) * probed) / page.length) : span * 16);
    }
    return page;
  }

  /**
   * Runs readRanges' merged ranges. Each range is one index walked in order, which PostgreSQL
   * would turn, on statistics that lag behind the store (after a bulk load, say), into a bitmap of
   * the whole range and a sort: tens of milliseconds per range. There it runs with bitmap and
   * sequential scans off, so the ordered index scan is the plan whatever the statistics say.
   */
  private async rangeSeqs(sql: string, bindings: Knex.Value[]): Promise<number[]> {
    const seqs = (rows: { seq: number | string }[]) => rows.map((r) => Number(r.seq));
    if (!this.postgres) return seqs(await this.reader.raw(sql, bindings));
    return this.reader.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_bitmapscan = off');
      await trx.raw('SET LOCAL enable_seqscan = off');
      return seqs((await trx.raw(sql, bindings)).rows);
    });
  }

  /** Events of every environment committed after `after`, oldest first: what the live stream polls. */
  async since(after: number, limit: number): Promise<ReadEvent[]> {
    const rows = await this.reader<EventRow>('events').where('seq', '>', after).orderBy('seq', 'asc').limit(limit);
    return rows.map(this.eventOf);
  }

  /** The highest seq committed so far (0 for an empty store). */
  async head(): Promise<number> {
    const row = await this.reader('events').max<{ m: number | string | null }[]>({ m: 'seq' }).first();
    const head = Number(row?.m ?? 0);
    if (head > this.knownHead) this.knownHead = head;
    return head;
  }

  /**
   * The highest seq the store has ever issued: the events' sequence's high-water mark, not max(seq).
   * Retention leaves it in place; a store restored from a backup (or PITR), or cloned from another,
   * has it rolled back with the rows. A cursor above it was issued after the store's state, not
   * before a deletion (the stream refuses it). On PostgreSQL a sequence logs values ahead, so after
   * recovery it may stand above the last seq issued: no seq at or below it is issued again anyway.
   */
  async issuedHead(): Promise<number> {
    if (!this.postgres) {
      // seq is AUTOINCREMENT (bigIncrements): sqlite_sequence keeps the largest seq ever inserted; no row, none yet.
      const row = await this.reader('sqlite_sequence').select('seq').where('name', 'events').first<{ seq: number | string } | undefined>();
      return Number(row?.seq ?? 0);
    }
    // The sequence named as the connection's search_path resolves `events` (db.ts: ?schema=).
    const named = await this.reader.raw<{ rows: { name: string | null }[] }>("SELECT pg_get_serial_sequence('events', 'seq') AS name");
    const name = named.rows[0]?.name;
    if (!name) throw new Error('the events table has no seq sequence');
    // The name comes quoted as needed from PostgreSQL itself.
    const mark = await this.reader.raw<{ rows: { last_value: number | string; is_called: boolean }[] }>(`SELECT last_value, is_called FROM ${name}`);
    const row = mark.rows[0]!;
    // Not yet called: last_value is the first value nextval will give, none issued.
    return row.is_called ? Number(row.last_value) : Number(row.last_value) - 1;
  }

  /** `high` (none: no bound) clamped to the head; asks the store only above the head known. */
  private async belowHead(high: number | undefined): Promise<number> {
    return high !== undefined && high <= this.knownHead ? high : Math.min(high ?? Infinity, await this.head());
  }

  async environments(): Promise<string[]> {
    return (await this.knex('environments').select('name')).map((r: { name: string }) => r.name);
  }

  /**
   * Deletes up to `limit` of the environment's oldest events created before cutoffMs; returns how
   * many. Once none are left, their time marks go too.
   */
  async prune(environment: string, cutoffMs: number, limit: number): Promise<number> {
    const bounds = await seqBounds(this.reader, environment, undefined, cutoffMs);
    if (bounds.empty) return 0;
    const rows: { seq: number | string; reasons: string; facet: number | string }[] = await this.reader('events')
      .select('seq', 'reasons', 'facet')
      .where('environment', environment)
      .where('seq', '<=', bounds.hi!)
      .where('created_at', '<', cutoffMs)
      .orderBy('seq', 'asc')
      .limit(limit);
    // Fewer than asked: none is left before the cutoff, and the time marks of that time can go too.
    const last = rows.length < limit ? cutoffMs : undefined;
    if (rows.length || last !== undefined) {
      await this.writes.deleteEvents(
        environment,
        rows.map((r) => ({ seq: Number(r.seq), facet: Number(r.facet), reasons: JSON.parse(r.reasons) as string[] })),
        last,
      );
    }
    return rows.length;
  }
}
