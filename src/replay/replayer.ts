import type { Knex } from 'knex';
import type { Evaluation } from '../evaluate/evaluator.js';
import type { Catalog } from '../policy/catalog.js';
import { MemoryChallengeStore, type ChallengeStore } from '../state/challenges.js';
import type { StoredEvent } from '../store/eventStore.js';
import { isConfigured, recover, redecide } from './recorded.js';
import { ReplayVelocity } from './velocity.js';

// A retry is answered by the challenge that its challenged evaluation, decided again earlier in the
// same replay, was issued: by none when the working tree would not ask for one (or not of the type
// the retry names), and then as live: challenge_invalid with a fresh challenge, or whatever else
// the working tree decides. Re-deciding the retry's own request to find out would misread a step-up
// that came from what may differ on a retry (a human signal since refreshed, an advisory delta,
// which a retry does not ask for), and report changes where the policy is the same.

/**
 * `skip`: nothing a policy reads was recorded (ingested, no facts), so there is nothing to compare.
 * `unconfigured`: the working tree does not configure the operation in the event's environment, so
 * live it answers 422 unknown_operation: a change, not a skip.
 * `retryNowChecked`: a satisfied retry recorded without a velocity count (before retries were held
 * to the window, or under a policy without one) that the working tree held to its window.
 */
export type Again = { skip: string } | { unconfigured: true } | { evaluation: Evaluation; rebuilt: boolean; retryNowChecked: boolean };

/** What the replay shares between its evaluations, as live ones share the server's counters and challenges. */
export class Replayer {
  readonly velocity: ReplayVelocity;
  private readonly challenges: ChallengeStore = new MemoryChallengeStore();

  constructor(
    knex: Knex,
    private readonly catalog: Catalog,
    private readonly challengeTtlMs: number,
  ) {
    this.velocity = new ReplayVelocity(knex, catalog);
  }

  /** One stored event decided again under the working tree, or why it cannot be. */
  async again(event: StoredEvent): Promise<Again> {
    const recovered = recover(event);
    if (!recovered.ok || !isConfigured(this.catalog, recovered.tx)) {
      // Not re-decided, yet the live counter counted the attempt.
      await this.velocity.feed(event);
      return recovered.ok ? { unconfigured: true } : { skip: recovered.reason };
    }
    const { tx } = recovered;
    const counters = this.velocity.counterFor(event, tx.serviceCount);
    // A challenge issued again expires when the recorded one did (the server's TTL may not be the default).
    const expiresAt = Date.parse(event.explanation.challenge?.expiresAt ?? '');
    const challengeTtlMs = expiresAt > tx.at ? expiresAt - tx.at : this.challengeTtlMs;
    const evaluation = await redecide(this.catalog, tx, { counters, challenges: this.challenges, challengeTtlMs });
    const retryNowChecked = tx.challenge?.kind === 'satisfied' && tx.serviceCount === undefined && counters.peeked;
    return { evaluation, rebuilt: counters.rebuilt, retryNowChecked };
  }
}

