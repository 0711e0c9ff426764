import { pino, type Logger } from 'pino';
import { readSettings } from '../config/env.js';
import { safeError } from '../http/logger.js';

// A rule that threw while it ran is denied (run.ts) and said here. The evaluator has no logger of
// its own (it may run in a thread, or in the CLI, whose stdout is its answer): the line goes to
// stderr, at the service's LOG_LEVEL, with the policy's and the rule's names and the error's name
// and code only, never its message, which may quote what the rule read.

let logger: Logger | undefined;

function level(): string {
  try {
    return readSettings().logLevel;
  } catch {
    return 'info';
  }
}

export function logRuleFailure(policyId: string, rule: string, err: unknown): void {
  logger ??= pino({ level: level(), base: { service: 'tps' } }, pino.destination(2));
  logger.error({ policyId, rule, err: safeError(err, { message: false }) }, 'policy rule failed while it ran; denied (policy_error)');
}
