// continuityStrength, 0 to 1: how much this protected action looks like the continuation of
// one person's ongoing use of this browser.
//
//   strength = 0.3 · sameSession + 0.3 · sameTab + 0.2 · knownDevice + 0.2 · human
//
//   sameSession  1 when the session id existed before this prepare (earlier page or prepare)
//   sameTab      1 when the tab id existed before this prepare (earlier load of this tab or
//                earlier prepare in this page); a new or duplicated tab scores 0
//   knownDevice  1 when the device was first seen in an earlier browser session
//   human        1 when the last human signal is at most 30 s old, falling linearly to 0 at 300 s;
//                0 without a signal or with capture switched off
//
// Rounded to two decimals.

export interface ContinuityFactors {
  sameSession: boolean;
  sameTab: boolean;
  knownDevice: boolean;
  signalAgeSeconds?: number;
}

export const FRESH_SIGNAL_SECONDS = 30;
export const STALE_SIGNAL_SECONDS = 300;

export function humanRecency(ageSeconds: number | undefined): number {
  if (ageSeconds === undefined) return 0;
  if (ageSeconds <= FRESH_SIGNAL_SECONDS) return 1;
  return Math.max(0, (STALE_SIGNAL_SECONDS - ageSeconds) / (STALE_SIGNAL_SECONDS - FRESH_SIGNAL_SECONDS));
}

export function continuityStrength(f: ContinuityFactors): number {
  const score = 0.3 * +f.sameSession + 0.3 * +f.sameTab + 0.2 * +f.knownDevice + 0.2 * humanRecency(f.signalAgeSeconds);
  return Math.round(score * 100) / 100;
}
