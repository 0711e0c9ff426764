import { readSettings } from '../config/env.js';
import { createLogger, safeError, type Logger } from '../http/logger.js';

// A rule that threw while it ran is denied (run.ts) and said here. The evaluator has no logger of
// its own (it may run in a thread): the line goes where the service's log goes (createLogger: stdout,
// its redact paths), at the service's LOG_LEVEL, with the policy's and the rule's names and the
// error's name and code only, never its message, which may quote what the rule read. A rule that
// keeps throwing throws on every request: each (policy, rule) is said at most once a minute.

let logger: Logger | undefined;

/** Where the lines go instead: the CLI sends them to stderr, since its stdout is its answer. */
export function logRuleFailuresTo(to: Logger): void {
  logger = to;
}

function level(): string {
  try {
    return readSettings().logLevel;
  } catch {
    return 'info';
  }
}

export const RULE_FAILURE_LOG_EVERY_MS = 60_000;
// Rules said within the last minute, by policy and rule (when), oldest first; bounded.
const MAX_REMEMBERED = 1000;
const lastLogged = new Map<string, number>();

/** Whether (policy, rule) was not said within the last minute; if so, it is now. */
function due(key: string, nowMs: number): boolean {
  const last = lastLogged.get(key);
  if (last !== undefined && nowMs - last < RULE_FAILURE_LOG_EVERY_MS) return false;
  lastLogged.delete(key);
  if (lastLogged.size >= MAX_REMEMBERED) {
    // The oldest first: drop those past their minute, and the oldest one at least.
    for (const [k, at] of lastLogged) {
      if (lastLogged.size < MAX_REMEMBERED && nowMs - at < RULE_FAILURE_LOG_EVERY_MS) break;
      lastLogged.delete(k);
    }
  }
  lastLogged.set(key, nowMs);
  return true;
}

export function logRuleFailure(policyId: string, rule: string, err: unknown, nowMs = Date.now()): void {
  if (!due(`${policyId}\u0000${rule}`, nowMs)) return;
  logger ??= createLogger(level());
  logger.error({ policyId, rule, err: safeError(err, { message: false }) }, 'policy rule failed while it ran; denied (policy_error)');
}
