import { CHALLENGE_TYPES, type AiAssessment, type ChallengeType, type DecisionEvent, type EvaluateRequest, type RiskBand } from '../api/types.js';
import { DEFAULT_CHALLENGE_TTL_MS, FixedVelocityCounter, OfflineEvaluator, RecordedAdvisory } from '../evaluate/offline.js';
import { transactionFingerprint } from '../evaluate/fingerprint.js';
import type { Evaluation } from '../evaluate/evaluator.js';
import type { Facts } from '../facts/facts.js';
import { requestFromFacts } from '../facts/request.js';
import { lookupOperation, type Catalog } from '../policy/catalog.js';
import { MemoryChallengeStore, type ChallengeStore } from '../state/challenges.js';
import type { VelocityCounter } from '../state/counters.js';
import { InvalidRetryChallenges } from './invalidRetry.js';

/** A recorded evaluation, as far as it can be evaluated again: its inputs and the state it met. */
export interface RecordedTransaction {
  environment: string;
  at: number;
  /** The request, rebuilt from the stored facts, without its challengeResult. */
  request: EvaluateRequest;
  /** TPS's own velocity count the evaluation saw, when its policy counted one. */
  serviceCount?: number;
  /** The advisory assessment that was recorded: reused, a model is never asked again. */
  ai?: AiAssessment;
  /** What the retry's challengeResult amounted to, and for a satisfied one what had been challenged. */
  challenge?: { kind: 'satisfied'; score: number; band: RiskBand; reasons: string[] } | { kind: 'failed' } | { kind: 'invalid' };
  /** The challenge type the retry's challengeResult named, when it named one (requestSummary). */
  challengeType?: ChallengeType;
}

/** The state a replay's evaluations share, as live ones share the server's. */
export interface ReplayState {
  counters: VelocityCounter;
  /**
   * The challenges the replay's own evaluations issued: a passed or failed retry uses up the one its
   * challenged evaluation was issued again under the working tree, or finds none, as it would live.
   */
  challenges: ChallengeStore;
  challengeTtlMs: number;
}

export type Recovered = { ok: true; tx: RecordedTransaction } | { ok: false; reason: string };

export const SKIP_INGESTED = 'ingested: recorded with normalizedSignals only, not the inputs a policy reads';
export const SKIP_NO_FACTS = 'recorded without normalized inputs (explanation.facts)';

/** Reads an event back into a transaction, or says why it cannot be re-decided. */
export function recover(event: Pick<DecisionEvent, 'source' | 'environment' | 'createdAt' | 'score' | 'riskBand' | 'reasons' | 'explanation' | 'requestSummary'>): Recovered {
  if (event.source === 'ingest') return { ok: false, reason: SKIP_INGESTED };
  const stored = event.explanation?.facts as (Facts & { velocity?: { serviceCount?: number } }) | undefined;
  if (!stored?.operation?.key || !stored.actor?.id || !stored.resource?.type) return { ok: false, reason: SKIP_NO_FACTS };
  const { velocity, ...facts } = stored;
  const tx: RecordedTransaction = { environment: event.environment, at: Date.parse(event.createdAt), request: requestFromFacts(facts as Facts) };
  if (typeof velocity?.serviceCount === 'number') tx.serviceCount = velocity.serviceCount;
  if (event.explanation.aiAssessment) tx.ai = event.explanation.aiAssessment;
  const kind = event.explanation.challengeResult;
  if (kind === 'satisfied') {
    // The satisfied retry answered the challenged evaluation's score and band, and its reasons
    // followed by challenge_satisfied (CONTRACT "Evaluate"): what was challenged is read back from them.
    const cut = event.reasons.indexOf('challenge_satisfied');
    tx.challenge = { kind, score: event.score, band: event.riskBand ?? 'low', reasons: cut < 0 ? [...event.reasons] : event.reasons.slice(0, cut) };
  } else if (kind === 'failed' || kind === 'invalid') tx.challenge = { kind };
  const named = (event.requestSummary?.challengeResult as { type?: unknown } | undefined)?.type;
  if (tx.challenge && CHALLENGE_TYPES.includes(named as ChallengeType)) tx.challengeType = named as ChallengeType;
  return { ok: true, tx };
}

/**
 * Evaluates a recorded transaction with `catalog`, through the server's Evaluator, the clock reading
 * the event's own time and the recorded advisory assessment standing in for a model. A replay hands
 * in its shared state (velocity counts, the challenges its evaluations issued); alone, the recorded
 * velocity count and challenge stand in for the live ones.
 */
export async function redecide(catalog: Catalog, tx: RecordedTransaction, state?: ReplayState): Promise<Evaluation> {
  const request: EvaluateRequest = { ...tx.request };
  // An invalid retry stays one, and its fresh challenge is the replay's, as live (invalidRetry.ts).
  const challenges = !state ? new MemoryChallengeStore() : tx.challenge?.kind === 'invalid' ? new InvalidRetryChallenges(state.challenges) : state.challenges;
  if (!state && tx.challenge?.kind === 'satisfied') {
    const op = lookupOperation(catalog, tx.environment, request.operationKey);
    const policy = op && catalog.policies.get(op.policyId);
    await challenges.issue({
      id: 'ch_replayed',
      type: tx.challengeType ?? policy?.stepUpChallenge ?? 'passkey',
      fingerprint: transactionFingerprint(tx.environment, request),
      environment: tx.environment,
      score: tx.challenge.score,
      band: tx.challenge.band,
      reasons: tx.challenge.reasons,
      telemetryId: 'replayed',
      expiresAt: tx.at + DEFAULT_CHALLENGE_TTL_MS,
    }, tx.at);
  }
  if (tx.challenge) request.challengeResult = { passed: tx.challenge.kind !== 'failed', ...(tx.challengeType ? { type: tx.challengeType } : {}) };
  const offline = new OfflineEvaluator({
    catalog,
    counters: state?.counters ?? new FixedVelocityCounter(tx.serviceCount ?? 1),
    challenges,
    advisor: new RecordedAdvisory(tx.ai),
    now: () => tx.at,
    challengeTtlMs: state?.challengeTtlMs,
  });
  return offline.evaluate(request, tx.environment);
}

export const isConfigured = (catalog: Catalog, tx: RecordedTransaction): boolean => lookupOperation(catalog, tx.environment, tx.request.operationKey) !== undefined;
