import type { RiskBand, SignalContribution } from '../api/types.js';
import type { Thresholds } from '../policy/compile.js';
import type { CompiledSignal } from './signals.js';

export interface RiskAssessment {
  score: number;
  band: RiskBand;
  contributions: SignalContribution[];
  reasons: string[];
}

export const clampScore = (x: number): number => Math.round(Math.min(100, Math.max(0, x)) * 100) / 100;

export const bandOf = (score: number, t: Thresholds): RiskBand => (score >= t.high ? 'high' : score >= t.medium ? 'medium' : 'low');

/** Weighted signals to a 0..100 score: each contribution is value × weight, the score their sum. */
export function assessRisk(signals: readonly CompiledSignal[], facts: object, thresholds: Thresholds): RiskAssessment {
  const contributions: SignalContribution[] = [];
  const reasons: string[] = [];
  let sum = 0;
  for (const s of signals) {
    if (s.weight === 0) continue;
    const value = s.measure(facts);
    const contribution = value * s.weight;
    // Only a value above 0 contributes. One that is not a number in 0..1 is a signal's fault, and must
    // never make the score NaN: an event that cannot be stored, a 503 a fail-open caller reads as allow.
    if (!(value > 0 && value <= 1) || !Number.isFinite(contribution)) continue;
    sum += contribution;
    const fires = value >= s.reasonAt;
    if (fires && !reasons.includes(s.reason)) reasons.push(s.reason);
    contributions.push({ name: s.name, value, weight: s.weight, contribution, ...(fires ? { reason: s.reason } : {}) });
  }
  const score = clampScore(sum);
  return { score, band: bandOf(score, thresholds), contributions, reasons };
}
