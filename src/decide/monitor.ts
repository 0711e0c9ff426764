import type { MonitoredOutcome } from '../api/types.js';
import type { Outcome } from './decide.js';

/**
 * Monitor mode (a policy or operation rolled out with `mode: monitor`): the caller is answered allow,
 * with the would-be reasons and `monitor_mode`, and the event keeps what would have been decided.
 * Nothing is enforced, so no challenge, redaction or retry delay goes out.
 */
export function monitorOutcome(wouldBe: Outcome): { answered: Outcome; monitor: MonitoredOutcome } {
  const monitor: MonitoredOutcome = { decision: wouldBe.decision, reasons: wouldBe.reasons };
  if (wouldBe.challengeType) monitor.challengeType = wouldBe.challengeType;
  if (wouldBe.redaction) monitor.redaction = wouldBe.redaction;
  if (wouldBe.retryAfterSeconds !== undefined) monitor.retryAfterSeconds = wouldBe.retryAfterSeconds;
  const reasons = wouldBe.reasons.includes('monitor_mode') ? wouldBe.reasons : [...wouldBe.reasons, 'monitor_mode'];
  return { answered: { decision: 'allow', score: wouldBe.score, band: wouldBe.band, reasons }, monitor };
}
