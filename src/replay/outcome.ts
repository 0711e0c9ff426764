import type { ChallengeType, DecisionEvent, EvaluateResponse, Redaction, RiskBand } from '../api/types.js';

/** What the caller was answered besides the decision: each can change while the decision stays. */
export const OUTCOME_PARTS = ['challenge', 'redaction', 'retryAfterSeconds', 'riskBand'] as const;
export type OutcomePart = (typeof OUTCOME_PARTS)[number];

/** Each part as the report shows it ("none" when absent); equal texts are equal answers. */
export type OutcomeParts = Record<OutcomePart, string>;

// Fields sorted: a redaction is a set of fields, so a reordered list redacts the same.
const redactionText = (r: Redaction | undefined) => (r ? `${r.strategy} [${[...r.fields].sort().join(', ')}]` : 'none');

function parts(challenge: ChallengeType | undefined, redaction: Redaction | undefined, retryAfterSeconds: number | undefined, riskBand: RiskBand | null | undefined): OutcomeParts {
  return {
    challenge: challenge ?? 'none',
    redaction: redactionText(redaction),
    retryAfterSeconds: retryAfterSeconds === undefined ? 'none' : String(retryAfterSeconds),
    riskBand: riskBand ?? 'none',
  };
}

/** The answer a stored event records (a monitored one: the allow that was answered, as its decision is). */
export const recordedParts = (e: Pick<DecisionEvent, 'explanation' | 'riskBand'>): OutcomeParts =>
  parts(e.explanation.challenge?.type, e.explanation.redaction, e.explanation.retryAfterSeconds, e.riskBand);

export const replayedParts = (r: EvaluateResponse): OutcomeParts => parts(r.challenge?.type, r.redaction, r.retryAfterSeconds, r.riskBand);

export const changedParts = (from: OutcomeParts, to: OutcomeParts): OutcomePart[] => OUTCOME_PARTS.filter((p) => from[p] !== to[p]);
