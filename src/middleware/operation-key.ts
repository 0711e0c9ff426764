// Which operation a request is checked against, and whose mistake it is when TPS cannot take it.
// A key the browser chose (x-svc-operation-key) that is malformed or unknown is the browser's
// mistake: a 400, with no onError. A key the app configured that TPS does not know is the app's
// misconfiguration, which must stay loud (the 503 and onError of any other failure).

import type { EvaluateRequest } from '../api/types.js';
import { HEADERS } from '../browser/headers.js';
import { isTpsError } from '../client/errors.js';
import { CONTROL_OR_LONE_SURROGATE, MAX_OPERATION_KEY_LENGTH } from '../validate/characters.js';
import { halt, type Halt } from './outcome.js';

export interface ChosenKey {
  key: string;
  /** True when the browser's header chose it (the app configured no operationKey). */
  fromHeader: boolean;
}

export type OperationKeyOption<R> = string | ((request: R) => string | undefined);

/** The operation key to evaluate, or the 400 that stops the request before TPS is asked. */
export function chooseOperationKey<R>(request: R, header: (name: string) => string | undefined, option: OperationKeyOption<R> | undefined): ChosenKey | Halt {
  // The header only when the app configured nothing: a resolver that finds no key must not hand
  // the choice of operation to the browser.
  if (option !== undefined) {
    const key = typeof option === 'function' ? option(request) : option;
    return key ? { key, fromHeader: false } : halt('block', 400, 'missing_operation_key', 'No protected operation named.');
  }
  const key = header(HEADERS.operationKey)?.trim();
  if (!key) return halt('block', 400, 'missing_operation_key', `No protected operation named (send ${HEADERS.operationKey}).`);
  // Checked as TPS checks it, so the browser's mistake is not a TPS 400 read as an outage; the
  // value is not echoed, since it may carry anything.
  if (key.length > MAX_OPERATION_KEY_LENGTH || CONTROL_OR_LONE_SURROGATE.test(key)) {
    return halt('block', 400, 'invalid_operation_key', `The ${HEADERS.operationKey} header is not an operation key (at most ${MAX_OPERATION_KEY_LENGTH} characters, no control characters).`);
  }
  return { key, fromHeader: true };
}

/** The 400 for TPS's 422 unknown_operation when the browser chose the key (and `transaction` kept it); else undefined. */
export function unknownHeaderKey(error: unknown, chosen: ChosenKey, transaction: EvaluateRequest): Halt | undefined {
  if (!chosen.fromHeader || transaction.operationKey !== chosen.key) return undefined;
  if (!isTpsError(error) || error.status !== 422 || error.code !== 'unknown_operation') return undefined;
  return halt('block', 400, 'unknown_operation', `The ${HEADERS.operationKey} header names no protected operation configured here.`);
}
