import type { ChallengeChanges, ChallengeStore, StoredChallenge } from '../state/challenges.js';

/**
 * The replay's challenges as an invalid retry meets them. It finds none: what its client reported
 * passing was no challenge TPS had asked, so it is not taken to pass one the working tree asks.
 * What it does find is used up, and the fresh challenge it is issued is kept, as live: the user's
 * next retry passes on that one.
 */
export class InvalidRetryChallenges implements ChallengeStore {
  constructor(private readonly shared: ChallengeStore) {}

  issue(challenge: StoredChallenge, nowMs: number): Promise<void> {
    return this.shared.issue(challenge, nowMs);
  }

  async consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined> {
    await this.shared.consume(environment, fingerprint, id, nowMs);
    return undefined;
  }

  revert(changes: ChallengeChanges, nowMs: number): Promise<void> {
    return this.shared.revert(changes, nowMs);
  }

  async close(): Promise<void> {}
}
