import type { Knex } from 'knex';
import type { DecisionEvent } from '../api/types.js';
import { lookupOperation, type Catalog } from '../policy/catalog.js';
import { MemoryVelocityCounter, type VelocityCounter } from '../state/counters.js';
import { PolicyVersionStore } from '../store/policyVersionStore.js';

type Counted = Pick<DecisionEvent, 'source' | 'environment' | 'actorId' | 'operationKey' | 'createdAt' | 'policyVersionId' | 'explanation'>;

/** One evaluation's counter: answers the recorded count while it fits the window, else the rebuilt one. */
export interface ReplayCounter extends VelocityCounter {
  /** Whether the evaluation was answered a rebuilt count. */
  rebuilt: boolean;
  /** Whether the evaluation read the count without counting itself (a satisfied retry). */
  peeked: boolean;
}

/**
 * TPS's own velocity count rebuilt from the stored events, as the live counter counted them: one
 * in-process counter (the server's arithmetic, src/state/counters.ts) fed with every attempt of
 * the replay in seq order, per environment, actor and operation as the Evaluator keys it, over the
 * working tree's window. A satisfied retry counts nothing (it only reads the count), as live; every
 * other evaluation counts.
 */
export class ReplayVelocity {
  private readonly counter = new MemoryVelocityCounter();
  /** policyVersionId → its serviceWindow seconds (null: none), undefined when the store does not know it. */
  private readonly windows = new Map<string, Promise<number | null | undefined>>();
  private readonly versions: PolicyVersionStore;

  constructor(
    knex: Knex,
    private readonly catalog: Catalog,
  ) {
    this.versions = new PolicyVersionStore(knex);
  }

  /** The working tree's window for the operation, in seconds; undefined when it counts nothing. */
  private windowOf(environment: string, operationKey: string): number | undefined {
    const op = lookupOperation(this.catalog, environment, operationKey);
    return op && this.catalog.policies.get(op.policyId)?.serviceWindow?.seconds;
  }

  /** The longest window of the working tree, in seconds (0: none counts). */
  longestWindow(): number {
    return Math.max(0, ...[...this.catalog.policies.values()].map((p) => p.serviceWindow?.seconds ?? 0));
  }

  /** Counts an event that was not re-decided (e.g. stored without facts), as the live counter did. */
  async feed(event: Counted): Promise<void> {
    const seconds = this.windowOf(event.environment, event.operationKey);
    if (seconds === undefined || event.source !== 'evaluate' || event.explanation?.challengeResult === 'satisfied') return;
    await this.counter.hit(keyOf(event), seconds, Date.parse(event.createdAt));
  }

  /**
   * The counter one re-decided event is evaluated with: the Evaluator calls it when a window is in
   * force, and what it counts (hit: not a satisfied retry) counts in the rebuilt history.
   */
  counterFor(event: Counted, recorded: number | undefined): ReplayCounter {
    // A satisfied retry recorded the count as read (peek), any other evaluation with itself counted (hit).
    const recordedBy = event.explanation.challengeResult === 'satisfied' ? 'peek' : 'hit';
    return new EventCounter(this.counter, keyOf(event), (how, seconds) =>
      recorded !== undefined && how === recordedBy && event.policyVersionId
        ? this.windowRecorded(event.policyVersionId).then((s) => (s === seconds ? recorded : undefined))
        : Promise.resolve(undefined),
    );
  }

  /** The serviceWindow seconds of the policy version that recorded an event. */
  private windowRecorded(versionId: string): Promise<number | null | undefined> {
    let seconds = this.windows.get(versionId);
    if (!seconds) {
      const working = [...this.catalog.policies.values()].find((p) => p.versionId === versionId);
      seconds = working
        ? Promise.resolve(working.serviceWindow?.seconds ?? null)
        : this.versions
            .get(versionId)
            .then((v) => (v ? ((v.compiled.serviceWindow as { seconds: number } | null | undefined)?.seconds ?? null) : undefined))
            // Not known, then: the count is rebuilt rather than trusted.
            .catch(() => undefined);
      this.windows.set(versionId, seconds);
    }
    return seconds;
  }
}

// Environment, actor and operation, as the Evaluator keys its count (Evaluator.countVelocity); the
// replay keys every count of its own counter so, whether it re-decided the event or only fed it.
const keyOf = (e: Pick<Counted, 'environment' | 'actorId' | 'operationKey'>) => `${e.environment}\u0000${e.actorId}\u0000${e.operationKey}`;

class EventCounter implements ReplayCounter {
  rebuilt = false;
  peeked = false;
  constructor(
    private readonly counter: VelocityCounter,
    private readonly key: string,
    /** The recorded count if it was taken the same way over the same window, else undefined. */
    private readonly recorded: (how: 'hit' | 'peek', windowSeconds: number) => Promise<number | undefined>,
  ) {}

  async hit(_key: string, windowSeconds: number, nowMs: number): Promise<number> {
    return this.answer(await this.counter.hit(this.key, windowSeconds, nowMs), await this.recorded('hit', windowSeconds));
  }

  async peek(_key: string, windowSeconds: number, nowMs: number): Promise<number> {
    this.peeked = true;
    return this.answer(await this.counter.peek(this.key, windowSeconds, nowMs), await this.recorded('peek', windowSeconds));
  }

  private answer(rebuilt: number, recorded: number | undefined): number {
    if (recorded !== undefined) return recorded;
    this.rebuilt = true;
    return rebuilt;
  }

  async close(): Promise<void> {}
}
