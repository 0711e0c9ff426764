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

/** What one evaluation did to the challenges: undone (revert) when its event could not be committed. */
export interface ChallengeChanges {
  /** The live challenge its retry used up. */
  consumed?: StoredChallenge;
  /** The challenge it issued, which its caller never saw. */
  issued?: StoredChallenge;
}

export interface ChallengeStore {
  /** `nowMs`: the issuing evaluation's clock (a seed's or a replay's may be in the past). */
  issue(challenge: StoredChallenge, nowMs: number): Promise<void>;
  /**
   * Takes (and so uses up) the live challenge for this fingerprint, or the one named by id if it
   * belongs to this fingerprint. Returns undefined if none is live; never returns one twice.
   */
  consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined>;
  /**
   * Undoes an evaluation's changes, atomically: the issued challenge is withdrawn (its transaction's
   * pointer only while it names it) and the consumed one put back until its own expiry, its
   * pointer only if the transaction has none (a newer challenge stays the one found by fingerprint).
   * A withdrawn challenge's pointer goes back to the transaction's last put-back challenge while
   * that is live: concurrent retries are undone in any order, and the one that used the challenge
   * may be undone before the one that, finding it used, was issued another.
   */
  revert(changes: ChallengeChanges, nowMs: number): Promise<void>;
  close(): Promise<void>;
}

const pointerKey = (c: { environment: string; fingerprint: string }) => `${c.environment}\u0000${c.fingerprint}`;

export class MemoryChallengeStore implements ChallengeStore {
  private readonly byId = new Map<string, StoredChallenge>();
  private readonly byFingerprint = new Map<string, string>();
  /** Per transaction, the challenge last put back (revert): what a withdrawal points back at. */
  private readonly putBack = new Map<string, string>();
  private issued = 0;

  async issue(challenge: StoredChallenge, nowMs: number): Promise<void> {
    this.byId.set(challenge.id, challenge);
    this.byFingerprint.set(pointerKey(challenge), challenge.id);
    if (++this.issued % 1000 === 0) this.sweep(nowMs);
  }

  async consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined> {
    const fpKey = pointerKey({ environment, fingerprint });
    const chosen = id ?? this.byFingerprint.get(fpKey);
    if (!chosen) return undefined;
    const challenge = this.byId.get(chosen);
    if (!challenge || challenge.environment !== environment || challenge.fingerprint !== fingerprint) return undefined;
    this.drop(challenge);
    return challenge.expiresAt > nowMs ? challenge : undefined;
  }

  async revert({ consumed, issued }: ChallengeChanges, nowMs: number): Promise<void> {
    // Withdrawn first, so that the pointer it frees can name the consumed challenge again.
    if (issued) this.withdraw(issued, nowMs);
    if (consumed && consumed.expiresAt > nowMs) {
      this.byId.set(consumed.id, consumed);
      const fpKey = pointerKey(consumed);
      if (!this.byFingerprint.has(fpKey)) this.byFingerprint.set(fpKey, consumed.id);
      this.putBack.set(fpKey, consumed.id);
    }
  }

  /** Forgets a challenge its caller never saw; its pointer goes back to a live put-back challenge. */
  private withdraw(c: StoredChallenge, nowMs: number): void {
    this.byId.delete(c.id);
    const fpKey = pointerKey(c);
    if (this.byFingerprint.get(fpKey) !== c.id) return;
    const backId = this.putBack.get(fpKey);
    const back = backId === undefined ? undefined : this.byId.get(backId);
    if (back && back.expiresAt > nowMs) this.byFingerprint.set(fpKey, back.id);
    else this.byFingerprint.delete(fpKey);
  }

  private sweep(nowMs: number): void {
    for (const c of this.byId.values()) if (c.expiresAt <= nowMs) this.drop(c);
    for (const [fpKey, id] of this.putBack) if (!this.byId.has(id)) this.putBack.delete(fpKey);
  }

  /** Forgets a challenge, and its transaction's pointer while that still names it. */
  private drop(c: StoredChallenge): void {
    this.byId.delete(c.id);
    const fpKey = pointerKey(c);
    if (this.byFingerprint.get(fpKey) === c.id) this.byFingerprint.delete(fpKey);
  }

  async close(): Promise<void> {
    this.byId.clear();
    this.byFingerprint.clear();
    this.putBack.clear();
  }
}
