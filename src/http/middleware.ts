import crypto from 'node:crypto';
import type Koa from 'koa';
import { ApiError, invalidJson } from '../api/errors.js';
import type { ErrorBody } from '../api/types.js';
import type { Principal, KeyRing } from '../auth/keyring.js';
import { bearerKey, kindOf } from '../auth/keys.js';
import type { VelocityCounter } from '../state/counters.js';
import { safeError, type Logger } from './logger.js';

// What an operator reads for a dependency's outage: the cause is logged, never sent.
const OUTAGES: Partial<Record<string, string>> = { store_unavailable: 'event store could not commit', state_unavailable: 'shared state (Redis) did not answer' };

export interface TpsState {
  requestId: string;
  principal: Principal;
}
export type Ctx = Koa.ParameterizedContext<TpsState>;
export type Middleware = Koa.Middleware<TpsState>;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries x-request-id: the caller's if it sent a sane one, else a new one. */
export const requestId = (): Middleware => async (ctx, next) => {
  const given = ctx.get('x-request-id');
  ctx.state.requestId = REQUEST_ID.test(given) ? given : crypto.randomUUID();
  ctx.set('x-request-id', ctx.state.requestId);
  await next();
};

function send(ctx: Ctx, status: number, body: ErrorBody, headers?: Record<string, string>): void {
  ctx.status = status;
  ctx.body = body;
  if (headers) ctx.set(headers);
}

/** CONTRACT's error body for every failure; a stack trace never leaves the process. */
export const errors = (log: Logger): Middleware => async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) throw new ApiError('not_found', `no route for ${ctx.method} ${ctx.path}`);
  } catch (err) {
    const e = err instanceof ApiError ? err : bodyError(err);
    if (e) {
      if (e.code in OUTAGES) log.error({ requestId: ctx.state.requestId, err: safeError(e.cause) }, OUTAGES[e.code]!);
      send(ctx, e.status, { error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) } }, e.headers);
    } else {
      log.error({ requestId: ctx.state.requestId, err: safeError(err) }, 'internal error');
      send(ctx, 500, { error: { code: 'internal_error', message: `internal error; quote request id ${ctx.state.requestId}` } });
    }
  }
};

/** What reading a body (raw-body, co-body, koa-bodyparser, zlib through inflation) threw, as the client's error. */
function bodyError(err: unknown): ApiError | undefined {
  const e = err as { status?: number; type?: string; code?: unknown; errno?: unknown; message?: string } | undefined;
  if (e?.type === 'entity.too.large' || e?.status === 413) return new ApiError('payload_too_large', 'the request body is larger than the limit');
  if (e?.type === 'entity.parse.failed' || (e?.status === 400 && err instanceof SyntaxError)) return invalidJson();
  // raw-body's: the client hung up, or stopped, short of the content-length it announced.
  if (e?.type === 'request.aborted' || e?.type === 'request.size.invalid') {
    return new ApiError('invalid_json', 'the request body ended before the length its content-length announced');
  }
  // zlib's own error (Z_DATA_ERROR, Z_BUF_ERROR; Brotli's ERR__ERROR_…): the body is not what its content-encoding says.
  if (typeof e?.errno === 'number' && typeof e.code === 'string' && /^(?:Z_|ERR__ERROR_)/.test(e.code)) {
    return new ApiError('invalid_json', 'the request body could not be decoded as its content-encoding says');
  }
  // inflation's 415 (no type): a content-encoding other than gzip, deflate, br or identity.
  if (e?.status === 415 && e.type === undefined && e.message?.startsWith('Unsupported Content-Encoding')) {
    return new ApiError('unsupported_media_type', 'the request body\'s content-encoding is not supported (gzip, deflate, br or none)');
  }
  if (e?.status === 415 || e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ApiError('unsupported_media_type', 'the request body must be JSON (content-type: application/json)');
  }
  return undefined;
}

/** Refuses bodies that do not say they are JSON before anything reads them. */
export const requireJson = (): Middleware => async (ctx, next) => {
  // ctx.is answers null for a request with neither content-length nor transfer-encoding (curl -X
  // POST without -d), whatever its content-type: a JSON one then goes on, its empty body read as
  // {}, and gets 400 invalid_request naming the missing fields.
  const json = ctx.is('application/json');
  const bodilessJson = json === null && ctx.request.type.trim().toLowerCase() === 'application/json';
  if (!json && !bodilessJson) throw new ApiError('unsupported_media_type', 'content-type must be application/json');
  await next();
};

/** Bearer secret keys only; publishable keys belong to the browser client. */
export const authenticate = (keys: KeyRing): Middleware => async (ctx, next) => {
  const key = bearerKey(ctx.get('authorization'));
  if (key === undefined) {
    throw new ApiError('missing_api_key', 'send the secret key as "authorization: Bearer svc_sec_…"', undefined, { 'www-authenticate': 'Bearer' });
  }
  const principal = kindOf(key) ? await keys.authenticate(key) : undefined;
  if (!principal) throw new ApiError('invalid_api_key', 'the API key is unknown or revoked', undefined, { 'www-authenticate': 'Bearer error="invalid_token"' });
  if (principal.kind !== 'secret') throw new ApiError('publishable_key_not_allowed', 'a publishable key (svc_pub_) cannot call a server endpoint; use the secret key from server code');
  ctx.state.principal = principal;
  await next();
};

/** The per-key API quota (TPS_KEY_RATE_LIMIT_PER_MINUTE; 0 turns it off). */
export const rateLimit = (counter: VelocityCounter, perMinute: number): Middleware => async (ctx, next) => {
  if (perMinute > 0) {
    const now = Date.now();
    const used = await counter.hit(`quota\u0000${ctx.state.principal.keyId}`, 60, now);
    if (used > perMinute) {
      const retryAfter = String(Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000)));
      throw new ApiError('rate_limited', `this key's quota of ${perMinute} requests per minute is spent`, undefined, { 'retry-after': retryAfter });
    }
  }
  await next();
};
