import { EVENT_COLUMNS, fromRow, keyOf, rowValues } from './eventRows.js';
import type { EventInsert, EventWriter } from './eventWriteTx.js';
import { FacetIds, facetOf, type Facet } from './facets.js';
import { reasonKeys, reasonRows } from './reasonIndex.js';
import type { EventRecord, InsertNewResult, StoredEvent } from './eventStore.js';
import { bucketOf } from './timeMarks.js';

/** An event retention deletes: what finds its reason index rows. */
export interface PrunedRow {
  seq: number;
  facet: number;
  reasons: string[];
}

/**
 * An event made ready for the store before the writer's turn: its column values as the JSON text
 * of an array (EVENT_COLUMNS order, the compressed explanation as hex), which the batch's JSON
 * carries as it is, its facet and its reason keys. Plain data with the row already text, so the
 * evaluation thread builds it and hands it over as one string (src/evaluate/thread.ts).
 */
export interface PreparedEvent {
  valuesJson: string;
  facet: Facet;
  reasonKeys: number[];
}

const EXPLANATION_Z = EVENT_COLUMNS.indexOf('explanation_z');

export function prepareEvent(e: EventRecord): PreparedEvent {
  const values = rowValues(e);
  values[EXPLANATION_Z] = (values[EXPLANATION_Z] as Buffer | null)?.toString('hex') ?? null;
  return { valuesJson: JSON.stringify(values), facet: facetOf(e), reasonKeys: reasonKeys(e.environment, e.reasons) };
}

/**
 * Writing events: one statement per batch that also writes its reason index and time marks. The
 * same logic for both stores; only the statements differ (eventWriteTx.ts).
 */
export class EventWrites {
  private readonly facetIds = new FacetIds();

  constructor(private readonly writer: EventWriter) {}

  /** Stores a batch in one statement; a clash with a stored telemetryId fails the whole batch. */
  insertBatch(events: readonly EventRecord[]): Promise<void> {
    return this.insertPrepared(events.map(prepareEvent));
  }

  /** insertBatch for events already prepared. With every facet known, the insert starts before this returns. */
  insertPrepared(events: readonly PreparedEvent[]): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    const rows = this.rows(events);
    return Array.isArray(rows) ? this.writer.insertAlone(rows) : rows.then((r) => this.writer.insertAlone(r));
  }

  /**
   * Stores the records whose (environment, telemetryId) is new, in one transaction, and returns the
   * stored event of every key that was already taken (or, for a key this batch stored, the record
   * that stored it), so the caller can tell a repeat from a conflict. The unique key decides, so
   * concurrent callers (even in other processes) store a telemetryId exactly once. Within the batch
   * the first record of a key wins.
   */
  async insertNew(events: readonly EventRecord[]): Promise<InsertNewResult> {
    const keys = events.map((e) => keyOf(e.environment, e.telemetryId));
    const first = new Map<string, number>();
    for (const [i, key] of keys.entries()) if (!first.has(key)) first.set(key, i);
    const rows = await this.rows([...first.values()].map((i) => prepareEvent(events[i]!)));
    const existing = new Map<string, StoredEvent | EventRecord>();
    const unreadable = new Map<string, unknown>();
    // Decoded one by one once committed: a row that cannot be read fails its own key, not the batch.
    for (const row of await this.writer.insertNew(rows)) {
      const key = keyOf(row.environment, row.telemetry_id);
      try {
        existing.set(key, fromRow(row));
      } catch (err) {
        unreadable.set(key, err);
      }
    }
    const taken = (key: string) => existing.has(key) || unreadable.has(key);
    const inserted = keys.map((key, i) => first.get(key) === i && !taken(key));
    // A repeat within the batch meets the record that its key's first stored.
    for (const [i, key] of keys.entries()) if (!inserted[i] && !taken(key)) existing.set(key, events[first.get(key)!]!);
    return { inserted, existing, unreadable };
  }

  /**
   * Retention: deletes these events of the environment with their reason index rows; with
   * forgetBeforeMs, also the time marks before it (no event created before it is left).
   */
  async deleteEvents(environment: string, rows: readonly PrunedRow[], forgetBeforeMs?: number): Promise<void> {
    const reasons = rows.flatMap((r) => reasonRows(environment, r.seq, r.facet, r.reasons));
    await this.writer.transaction(async (tx) => {
      if (rows.length) await tx.deleteEvents(rows.map((r) => r.seq), reasons);
      if (forgetBeforeMs !== undefined) await tx.forgetMarks(environment, bucketOf(forgetBeforeMs));
    });
  }

  /**
   * The rows that insert these events, their facet ids found, before any transaction opens. New
   * facets are committed on their own: a facet with no event yet is harmless, and their ids can be
   * remembered at once.
   */
  private rows(events: readonly PreparedEvent[]): EventInsert[] | Promise<EventInsert[]> {
    const facets = events.map((e) => e.facet);
    const ids = this.facetIds.known(facets);
    const rowsOf = () => events.map((e, i) => `${e.valuesJson.slice(0, -1)},${ids[i]},${JSON.stringify(e.reasonKeys)}]`);
    const missing = facets.filter((_, i) => ids[i] === undefined);
    if (!missing.length) return rowsOf();
    return this.writer.transaction((tx) => tx.facetIds(missing)).then((found) => {
      this.facetIds.remember(missing, found);
      let next = 0;
      for (let i = 0; i < ids.length; i++) ids[i] ??= found[next++];
      return rowsOf();
    });
  }
}
