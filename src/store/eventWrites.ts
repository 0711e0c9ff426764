import { fromRow, keyOf, rowValues } from './eventRows.js';
import type { EventWriter, EventWriteTx, Inserted } from './eventWriteTx.js';
import { encodeExplanation } from './explanationCodec.js';
import { FacetIds, facetOf } from './facets.js';
import { reasonRows } from './reasonIndex.js';
import type { EventRecord, InsertNewResult, StoredEvent } from './eventStore.js';
import { bucketOf, markBatch } from './timeMarks.js';

/** An event retention deletes: what finds its reason index rows. */
export interface PrunedRow {
  seq: number;
  facet: number;
  reasons: string[];
}

/** What a batch wrote; `remember` keeps its facet ids once the transaction has committed. */
interface Written {
  inserted: Inserted[];
  remember(): void;
}

/** Deflates a batch's explanations (explanationCodec.ts), in line or on another thread. */
export type EncodeExplanations = (events: readonly EventRecord[]) => Promise<Buffer[]>;

export const encodeInLine: EncodeExplanations = async (events) => events.map((e) => encodeExplanation(e.explanation));

/**
 * Writing events: one transaction per batch with its facets, time marks and reason index. The same
 * logic for both stores; only the statements differ (eventWriteTx.ts).
 */
export class EventWrites {
  private readonly facetIds = new FacetIds();

  constructor(
    private readonly writer: EventWriter,
    private readonly encode: EncodeExplanations,
  ) {}

  /** Stores a batch in one transaction; a clash with a stored telemetryId fails the whole batch. */
  async insertBatch(events: readonly EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    // Before the transaction opens, so it is never held open while explanations are deflated.
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
      if (taken.length) for (const row of await tx.eventsByKey(taken)) existing.set(keyOf(row.environment, row.telemetry_id), fromRow(row));
      return { written, inserted, existing };
    });
    result.written.remember();
    return { inserted: result.inserted, existing: result.existing };
  }

  /**
   * Retention: deletes these events of the environment with their reason index rows; with
   * forgetBeforeMs, also the time marks before it (no event created before it is left).
   */
  async deleteEvents(environment: string, rows: readonly PrunedRow[], forgetBeforeMs?: number): Promise<void> {
    const reasons = rows.flatMap((r) => reasonRows(environment, r.seq, r.facet, r.reasons));
    await this.writer(async (tx) => {
      if (rows.length) await tx.deleteEvents(rows.map((r) => r.seq), reasons);
      if (forgetBeforeMs !== undefined) await tx.forgetMarks(environment, bucketOf(forgetBeforeMs));
    });
  }

  private async writeRows(tx: EventWriteTx, events: readonly EventRecord[], explanations: readonly Buffer[], ignoreConflicts: boolean): Promise<Written> {
    const facets = events.map(facetOf);
    const known = this.facetIds.known(facets);
    const missing = facets.filter((_, i) => known[i] === undefined);
    const found = missing.length ? await tx.facetIds(missing) : [];
    let next = 0;
    const ids = known.map((id) => id ?? found[next++]!);
    const inserted = await tx.insertEvents(
      events.map((e, i) => [...rowValues(e, explanations[i]), ids[i]]),
      ignoreConflicts,
    );
    const byKey = new Map(events.map((e, i) => [keyOf(e.environment, e.telemetryId), { e, facet: ids[i]! }]));
    await markBatch(
      tx,
      inserted.map((r) => ({ environment: r.environment, seq: Number(r.seq), createdAt: byKey.get(keyOf(r.environment, r.telemetry_id))!.e.createdAt })),
    );
    await tx.insertReasonRows(
      inserted.flatMap((r) => {
        const { e, facet } = byKey.get(keyOf(r.environment, r.telemetry_id))!;
        return reasonRows(r.environment, Number(r.seq), facet, e.reasons);
      }),
    );
    return { inserted, remember: () => this.facetIds.remember(facets, ids) };
  }
}
