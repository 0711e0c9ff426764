import type { ChallengeType, Decision, Redaction, RiskBand } from '../api/types.js';
import type { CompiledRule } from '../policy/compile.js';

/** CONTRACT: when several decisions apply, the first of these wins. */
export const PRECEDENCE: readonly Decision[] = ['deny', 'throttle', 'step_up_required', 'allow_redacted', 'allow'];

/** What the retry's challengeResult amounted to, once checked against the challenge store. */
export type ChallengeState =
  | { kind: 'none' }
  | { kind: 'satisfied'; score: number; band: RiskBand; reasons: string[] }
  | { kind: 'failed' }
  | { kind: 'invalid' };

export interface DecideInput {
  score: number;
  band: RiskBand;
  riskReasons: readonly string[];
  fired: readonly CompiledRule[];
  challenge: ChallengeState;
  stepUpChallenge: ChallengeType;
}

export interface Outcome {
  decision: Decision;
  score: number;
  band: RiskBand;
  reasons: string[];
  challengeType?: ChallengeType;
  redaction?: Redaction;
  retryAfterSeconds?: number;
}

interface Candidate {
  decision: Decision;
  reason: string;
  challenge?: ChallengeType;
  /** A shorthand's (or the invalid retry's): its challenge is the policy's default. */
  builtIn?: boolean;
  redaction?: Redaction;
  retryAfterSeconds?: number;
}

const rank = (d: Decision) => PRECEDENCE.indexOf(d);

function pushUnique(list: string[], items: Iterable<string>): void {
  for (const item of items) if (!list.includes(item)) list.push(item);
}

export function mergeRedactions(redactions: readonly Redaction[]): Redaction | undefined {
  if (redactions.length === 0) return undefined;
  const fields: string[] = [];
  for (const r of redactions) pushUnique(fields, r.fields);
  // Dropping is stricter than masking, so one rule asking for it wins.
  return { fields, strategy: redactions.some((r) => r.strategy === 'drop') ? 'drop' : 'mask' };
}

/**
 * One challenge is asked, and its satisfied retry lifts every step-up. So the one asked is that of a
 * rule written under rules: (its author named it for that condition, e.g. a proof token for a large
 * payment) before the shorthands' policy default (score-step-up, require-recent-human-signal).
 */
function challengeToAsk(winners: readonly Candidate[]): ChallengeType | undefined {
  return (winners.find((c) => c.challenge && !c.builtIn) ?? winners.find((c) => c.challenge))?.challenge;
}

/** Settles the decision from fired rules and the challenge state; pure. */
export function decide(input: DecideInput): Outcome {
  const { challenge } = input;
  let candidates: Candidate[] = input.fired.map((r) => ({ decision: r.decision, reason: r.reason, challenge: r.challenge, builtIn: r.builtIn, redaction: r.redaction, retryAfterSeconds: r.retryAfterSeconds }));
  if (challenge.kind === 'failed') candidates.push({ decision: 'deny', reason: 'challenge_failed' });
  if (challenge.kind === 'invalid') candidates.push({ decision: 'step_up_required', reason: 'challenge_invalid', challenge: input.stepUpChallenge, builtIn: true });
  if (challenge.kind === 'satisfied') candidates = candidates.filter((c) => c.decision !== 'step_up_required');

  const decision = candidates.reduce<Decision>((best, c) => (rank(c.decision) < rank(best) ? c.decision : best), 'allow');
  const winners = candidates.filter((c) => c.decision === decision);

  const satisfied = challenge.kind === 'satisfied';
  const score = satisfied ? challenge.score : input.score;
  const band = satisfied ? challenge.band : input.band;
  const reasons: string[] = [];
  if (satisfied) pushUnique(reasons, [...challenge.reasons, 'challenge_satisfied']);
  else pushUnique(reasons, input.riskReasons);
  pushUnique(reasons, winners.map((c) => c.reason));
  if (reasons.length === 0) reasons.push(band === 'low' ? 'low_risk_operation' : band === 'medium' ? 'medium_risk_score' : 'high_risk_score');

  const outcome: Outcome = { decision, score, band, reasons };
  if (decision === 'step_up_required') outcome.challengeType = challengeToAsk(winners) ?? input.stepUpChallenge;
  if (decision === 'allow_redacted') outcome.redaction = mergeRedactions(winners.flatMap((c) => (c.redaction ? [c.redaction] : [])));
  if (decision === 'throttle') outcome.retryAfterSeconds = Math.max(...winners.map((c) => c.retryAfterSeconds ?? 0)) || undefined;
  return outcome;
}
