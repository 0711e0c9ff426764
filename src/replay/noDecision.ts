import type { Decision } from '../api/types.js';

/**
 * What the working tree answers in place of a decision, each counted as a change (a gate must not
 * pass it): `unknown_operation` is the live 422 for an operation the tree no longer configures in
 * the event's environment (its file removed, or `environments` leaving this one out);
 * `not_redecided` is an event the replay could not decide again (an unreadable row, a failure),
 * whose answer is unknown, so nothing shows it unchanged.
 */
export const NO_DECISION = ['unknown_operation', 'not_redecided'] as const;
export type NoDecision = (typeof NO_DECISION)[number];

/** A replayed event's answer under the working tree. */
export type Answer = Decision | NoDecision;

export const unconfigured = (operationKey: string, environment: string): string =>
  `operation "${operationKey}" is not configured for environment "${environment}" in the working tree`;

/** The detail of a row that could not be read: not its own text, which may hold request data. */
export const UNREADABLE_ROW = 'the stored row could not be read';
