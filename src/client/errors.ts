// Typed errors of the server client. `code` is one of CONTRACT's error codes when the server
// answered, or a client-side code when it could not (timeout, network, unreadable answer).

import type { ErrorCode, ErrorDetail } from '../api/types.js';

/** Codes the client raises itself, when no usable answer came back from TPS. */
export const CLIENT_ERROR_CODES = ['timeout', 'network_error', 'invalid_response', 'unknown_decision', 'aborted'] as const;
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

export interface TpsErrorInit {
  code: ErrorCode | ClientErrorCode | (string & {});
  message: string;
  status?: number;
  requestId?: string;
  details?: ErrorDetail[];
  retryAfterSeconds?: number;
  cause?: unknown;
}

export class TpsError extends Error {
  override readonly name = 'TpsError';
  readonly code: TpsErrorInit['code'];
  /** HTTP status, or undefined when no answer arrived. */
  readonly status: number | undefined;
  /** The server's x-request-id, to quote when reporting a problem. */
  readonly requestId: string | undefined;
  readonly details: ErrorDetail[] | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(init: TpsErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId;
    this.details = init.details;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }

  /**
   * True when TPS itself could not give an answer (no connection, timeout, overload, server fault).
   * Only these follow failureMode and are retried by ingest: a 4xx other than 429 is a caller bug
   * (bad key, bad payload, unknown operation) and failing open on it would hide the bug.
   */
  get unavailable(): boolean {
    if (this.code === 'aborted' || this.code === 'unknown_decision') return false;
    // The status first: a 429 or a 4xx whose body then stalled or broke is still that answer.
    if (this.status !== undefined && this.status >= 400) return this.status >= 500 || this.status === 429;
    return this.code === 'timeout' || this.code === 'network_error' || this.code === 'invalid_response';
  }
}

/** The error of a call ended by the caller's own signal: while in flight, or while waiting to retry. */
export function abortedError(cause?: unknown, requestId?: string, status?: number): TpsError {
  return new TpsError({ code: 'aborted', message: 'The call to TPS was aborted by the caller', status, requestId, cause });
}

export function isTpsError(value: unknown): value is TpsError {
  return value instanceof TpsError;
}
