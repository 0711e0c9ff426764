import type { ErrorCode, ErrorDetail } from './types.js';

const STATUS: Record<ErrorCode, number> = {
  invalid_json: 400,
  invalid_request: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  publishable_key_not_allowed: 403,
  not_found: 404,
  telemetry_id_conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_operation: 422,
  rate_limited: 429,
  store_unavailable: 503,
  evaluation_unavailable: 503,
  state_unavailable: 503,
  internal_error: 500,
};

/** The HTTP status a code is answered with. */
export const statusOf = (code: ErrorCode): number => STATUS[code];

/** An error whose code, status and message may be shown to the client (CONTRACT "Errors"). */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.status = STATUS[code];
  }

  /**
   * The event store could not commit (nothing was stored) or be read (nothing was changed): an
   * outage to wait out, like state_unavailable, so every such 503 says when to come back.
   */
  static storeUnavailable(message: string, cause: unknown, details?: ErrorDetail[]): ApiError {
    return new ApiError('store_unavailable', message, details, { 'retry-after': '1' }, cause);
  }
}

/**
 * The shared state (Redis: velocity counts, challenges, key quotas) refused, was unreachable or did
 * not answer in time: an outage to wait out, not a bug's 500. Nothing was decided or recorded. A
 * challenge the request used is put back, also when Redis ran the use but its reply was lost or
 * late (src/state/redis.ts; a silent Redis runs the put-back once it answers again); if the
 * put-back cannot reach Redis either, the challenge may stay used, and the retry is challenged
 * again, never allowed twice.
 */
export const stateUnavailable = (cause: unknown): ApiError =>
  new ApiError('state_unavailable', 'the shared state (Redis) did not answer; nothing was decided: retry', undefined, { 'retry-after': '1' }, cause);

/** A body that does not parse as JSON: every JSON route's, in whichever thread it is parsed (src/validate/json.ts). */
export const invalidJson = (): ApiError => new ApiError('invalid_json', 'the request body is not valid JSON');
