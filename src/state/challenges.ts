import type { ChallengeType, RiskBand } from '../api/types.js';

/** A step-up challenge as issued: bound to one transaction's fingerprint, single use, expiring. */
export interface StoredChallenge {
  id: string;
  type: ChallengeType;
  fingerprint: string;
  environment: string;
  score: number;
  band: RiskBand;
  reasons: string[];
  telemetryId: string;
  expiresAt: number;
}

export interface ChallengeStore {
  issue(challenge: StoredChallenge): Promise<void>;
  /**
   * Takes (and so uses up) the live challenge for this fingerprint, or the one named by id if it
   * belongs to this fingerprint. Returns undefined if none is live; never returns one twice.
   */
  consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined>;
  close(): Promise<void>;
}

export class MemoryChallengeStore implements ChallengeStore {
  private readonly byId = new Map<string, StoredChallenge>();
  private readonly byFingerprint = new Map<string, string>();
  private issued = 0;

  async issue(challenge: StoredChallenge): Promise<void> {
    this.byId.set(challenge.id, challenge);
    this.byFingerprint.set(`${challenge.environment}\u0000${challenge.fingerprint}`, challenge.id);
    if (++this.issued % 1000 === 0) this.sweep(Date.now());
  }

  async consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined> {
    const fpKey = `${environment}\u0000${fingerprint}`;
    const chosen = id ?? this.byFingerprint.get(fpKey);
    if (!chosen) return undefined;
    const challenge = this.byId.get(chosen);
    if (!challenge || challenge.environment !== environment || challenge.fingerprint !== fingerprint) return undefined;
    this.byId.delete(chosen);
    if (this.byFingerprint.get(fpKey) === chosen) this.byFingerprint.delete(fpKey);
    return challenge.expiresAt > nowMs ? challenge : undefined;
  }

  private sweep(nowMs: number): void {
    for (const [id, c] of this.byId) {
      if (c.expiresAt > nowMs) continue;
      this.byId.delete(id);
      const fpKey = `${c.environment}\u0000${c.fingerprint}`;
      if (this.byFingerprint.get(fpKey) === id) this.byFingerprint.delete(fpKey);
    }
  }

  async close(): Promise<void> {
    this.byId.clear();
    this.byFingerprint.clear();
  }
}
