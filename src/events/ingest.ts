import { stringify } from 'safe-stable-stringify';
import type { IngestRecord } from '../api/types.js';
import { GroupCommitter } from '../record/groupCommit.js';
import { keyOf, type EventRecord, type KnexEventStore, type StoredEvent } from '../store/eventStore.js';

export type IngestOutcome = 'stored' | 'duplicate' | 'conflict';

interface Pending {
  event: EventRecord;
  outcome?: IngestOutcome;
  /** Why this record alone has no outcome, though its batch committed. */
  failure?: unknown;
}

export interface IngestorOptions {
  maxBatch: number;
  maxDelayMs: number;
  /** Called after a batch that stored something has committed (wakes the live stream). */
  onCommit?: () => void;
  now?: () => number;
}

/** SPEC 2.3 → the stored event: evidence only, so no policy, band or version of ours is attached. */
export function ingestEvent(environment: string, r: IngestRecord, createdAt: number): EventRecord {
  return {
    telemetryId: r.telemetryId,
    environment,
    source: 'ingest',
    createdAt,
    operationKey: r.operationKey,
    actorId: r.actorId,
    resourceType: r.resourceType,
    resourceId: r.resourceId,
    decision: r.decision,
    score: r.score,
    riskBand: null,
    reasons: r.reasons,
    policyId: null,
    policyVersionId: null,
    requestSummary: r.requestSummary,
    explanation: { signals: [], rules: [], normalizedSignals: r.normalizedSignals },
  };
}

/** What "the same content" means for a repeated ingest: every field of SPEC 2.3, key order aside. */
const content = (e: EventRecord | StoredEvent): string =>
  stringify([e.source, e.operationKey, e.actorId, e.resourceType, e.resourceId, e.decision, e.score, e.reasons, e.requestSummary, e.explanation.normalizedSignals ?? null])!;

/**
 * POST /api/events/ingest behind group commit, like evaluate: concurrent ingests share one
 * transaction. The store's unique (environment, telemetry_id) key settles races, so a telemetryId
 * is stored exactly once; every other attempt is compared with what was stored.
 */
export class Ingestor {
  private readonly committer: GroupCommitter<Pending>;
  private readonly now: () => number;

  constructor(store: KnexEventStore, options: IngestorOptions) {
    this.now = options.now ?? Date.now;
    this.committer = new GroupCommitter<Pending>(
      async (items) => {
        const { inserted, existing, unreadable } = await store.insertNew(items.map((p) => p.event));
        // The batch is committed: from here on a record fails alone, as throwing would fail every
        // record of the batch, the stored ones included.
        items.forEach((p, i) => {
          if (inserted[i]) p.outcome = 'stored';
          else {
            const key = keyOf(p.event.environment, p.event.telemetryId);
            const stored = existing.get(key);
            if (stored) p.outcome = content(stored) === content(p.event) ? 'duplicate' : 'conflict';
            else p.failure = unreadable.get(key) ?? new Error('an ingest was neither inserted nor found');
          }
        });
        if (inserted.some(Boolean)) options.onCommit?.();
      },
      options.maxBatch,
      options.maxDelayMs,
    );
  }

  /** Resolves once the outcome is committed; rejects when the store could not commit. */
  async ingest(environment: string, record: IngestRecord): Promise<IngestOutcome> {
    const pending: Pending = { event: ingestEvent(environment, record, this.now()) };
    await this.committer.append(pending);
    if (pending.failure !== undefined) throw pending.failure;
    return pending.outcome!;
  }

  drain(): Promise<void> {
    return this.committer.drain();
  }
}
