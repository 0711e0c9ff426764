import crypto from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { ApiError } from '../api/errors.js';
import type { ErrorBody, ErrorCode } from '../api/types.js';
import type { Principal, KeyRing } from '../auth/keyring.js';
import { bearerKey, kindOf } from '../auth/keys.js';
import type { QuotaCounter } from '../state/counters.js';
import { safeError, type Logger } from './logger.js';

// What an operator reads for a dependency's outage: the cause is logged, never sent.
const OUTAGES: Partial<Record<string, string>> = { store_unavailable: 'event store could not commit or be read', state_unavailable: 'shared state (Redis) did not answer' };

export interface TpsState {
  requestId: string;
  principal: Principal;
}
export type Ctx = Koa.ParameterizedContext<TpsState>;
export type Middleware = Koa.Middleware<TpsState>;

/** A caller's x-request-id that is kept; any other is replaced by a new one. */
export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
export const REQUEST_ID_RULE = '1 to 128 letters, digits or . _ : -';

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
    await settleBody(ctx);
    if (e) {
      if (e.code in OUTAGES) log.error({ requestId: ctx.state.requestId, err: safeError(e.cause) }, OUTAGES[e.code]!);
      send(ctx, e.status, { error: { code: e.code, message: e.message, ...(e.details ? { details: e.details } : {}) } }, e.headers);
    } else {
      log.error({ requestId: ctx.state.requestId, err: safeError(err) }, 'internal error');
      send(ctx, 500, { error: { code: 'internal_error', message: `internal error; quote request id ${ctx.state.requestId}` } });
    }
  }
};

/** What reading a body (co-body/raw-body, zlib through inflation) threw, as the client's error. */
function bodyError(err: unknown): ApiError | undefined {
  const e = err as { status?: number; type?: string; code?: unknown; errno?: unknown; message?: string } | undefined;
  if (e?.type === 'entity.too.large' || e?.status === 413) return new ApiError('payload_too_large', 'the request body is larger than the limit');
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
  return undefined;
}

/** How much of a part-read body is read and dropped after a refusal, and for how long, to keep its connection. */
const DRAIN_BYTES = 1024 * 1024;
const DRAIN_MS = 1000;

/**
 * Before an error answer: a body whose reading stopped part-way (a chunked body over the limit, a
 * broken gzip stream) would stall the next request on its keep-alive connection, since Node drains
 * only a body nobody began to read. The rest is read and dropped, within bounds; past them, or once
 * the client is gone, the answer closes the connection. Draining first, rather than closing at once,
 * spares the client a reset that can swallow the answer while it is still sending.
 */
async function settleBody(ctx: Ctx): Promise<void> {
  const req = ctx.req;
  if (req.complete || !req.readableDidRead) return;
  if (!(await drain(req))) ctx.set('connection', 'close');
}

/** Reads `req` to its end and drops it: true when it ended within DRAIN_BYTES and DRAIN_MS. */
function drain(req: http.IncomingMessage): Promise<boolean> {
  if (req.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    let left = DRAIN_BYTES;
    const done = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('close', onGone).off('error', onGone);
      resolve(ended); // past a bound the stream flows on, unread, until the connection closes
    };
    const onData = (chunk: Buffer) => {
      left -= chunk.length;
      if (left < 0) done(false);
    };
    const onEnd = () => done(true);
    const onGone = () => done(false);
    const timer = setTimeout(onGone, DRAIN_MS);
    req.unpipe(); // from a decompressor that failed or was left paused
    req.on('data', onData).on('end', onEnd).on('close', onGone).on('error', onGone);
    req.resume();
  });
}

/**
 * What a failed read of the store (keys, events, policy versions) answers: the driver's error (the
 * database is down, a table is gone) is an outage to wait out, CONTRACT's 503, not a bug's 500. A
 * client's mistake (ApiError) and a fault of our own code (the language's own error types) stay as they are.
 */
export function storeReadFailed(err: unknown): never {
  if (err instanceof ApiError || err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError || err instanceof SyntaxError) throw err;
  throw ApiError.storeUnavailable('the store cannot be read just now; nothing was changed, retry', err);
}

// Requests Node's HTTP parser refuses (http.Server 'clientError'): Node's own status, CONTRACT's body.
// 431 and 408 have no code of their own in CONTRACT; `invalid_request` is its code for a request
// that breaks a bound, and the status says which. The chunk-extension bound is the body's (413).
const PARSER_REFUSALS: Partial<Record<string, [status: number, code: ErrorCode, message: string]>> = {
  HPE_HEADER_OVERFLOW: [431, 'invalid_request', 'the request line and headers are larger than the server accepts'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'payload_too_large', 'the chunk extensions of the request body are larger than the server accepts'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'invalid_request', 'the request did not arrive in time'],
};
const NOT_HTTP: [number, ErrorCode, string] = [400, 'invalid_request', 'the request is not valid HTTP: its request line, a header or its content-length is malformed'];

/**
 * http.Server's 'clientError': answers in CONTRACT's JSON, with an x-request-id of its own (the
 * request's headers were never read) and never a byte of the request, then closes the connection.
 * Only when nothing of another answer went out on it yet; otherwise, or once the client is gone,
 * the socket is just destroyed, as Node does.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // A response on this connection still in flight (keep-alive): Node's own check, on its own field.
  const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
  if (!socket.writable || inFlight?.headersSent || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, code, message] = PARSER_REFUSALS[err.code ?? ''] ?? NOT_HTTP;
  const body = JSON.stringify({ error: { code, message } } satisfies ErrorBody);
  const head = `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${crypto.randomUUID()}\r\nconnection: close\r\n\r\n`;
  // The server keeps connections half-open: once the answer is out, this one goes.
  socket.end(head + body, () => socket.destroy());
}

// JSON between systems is UTF-8 (RFC 8259 §8.1); ASCII is a part of it. Any other charset would
// be decoded into other text than the caller meant, so it is refused rather than guessed.
const JSON_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);
// The charset parameter, quoted or not; read leniently, as type-is reads the rest (a trailing ";" is fine).
const CHARSET = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i;

/**
 * Refuses bodies that do not say they are JSON in UTF-8 before anything reads them, and spells the
 * content-encoding as the body readers (inflation) expect it: codings are case-insensitive, and
 * x-gzip is gzip (RFC 9110 §8.4.1).
 */
export const requireJson = (): Middleware => async (ctx, next) => {
  // ctx.is answers null for a request with neither content-length nor transfer-encoding (curl -X
  // POST without -d), whatever its content-type: a JSON one then goes on, its empty body read as
  // {}, and gets 400 invalid_request naming the missing fields.
  const json = ctx.is('application/json');
  const bodilessJson = json === null && ctx.request.type.trim().toLowerCase() === 'application/json';
  if (!json && !bodilessJson) throw new ApiError('unsupported_media_type', 'content-type must be application/json');
  const charset = CHARSET.exec(ctx.get('content-type'));
  if (charset && !JSON_CHARSETS.has((charset[1] ?? charset[2]!).toLowerCase())) {
    throw new ApiError('unsupported_media_type', 'the request body must be UTF-8 (content-type: application/json; charset=utf-8, or no charset)');
  }
  const coding = ctx.req.headers['content-encoding'];
  if (coding !== undefined) {
    const spelt = coding.trim().toLowerCase();
    ctx.req.headers['content-encoding'] = spelt === 'x-gzip' ? 'gzip' : spelt;
  }
  await next();
};

/** Bearer secret keys only; publishable keys belong to the browser client. */
export const authenticate = (keys: KeyRing): Middleware => async (ctx, next) => {
  const key = bearerKey(ctx.get('authorization'));
  if (key === undefined) {
    throw new ApiError('missing_api_key', 'send the secret key as "authorization: Bearer svc_sec_…"', undefined, { 'www-authenticate': 'Bearer' });
  }
  let principal: Principal | undefined;
  try {
    principal = kindOf(key) ? await keys.authenticate(key) : undefined;
  } catch (err) {
    storeReadFailed(err); // a key not cached (or cached too long ago) is read from the store
  }
  if (!principal) throw new ApiError('invalid_api_key', 'the API key is unknown or revoked', undefined, { 'www-authenticate': 'Bearer error="invalid_token"' });
  if (principal.kind !== 'secret') throw new ApiError('publishable_key_not_allowed', 'a publishable key (svc_pub_) cannot call a server endpoint; use the secret key from server code');
  ctx.state.principal = principal;
  await next();
};

/**
 * The per-key API quota (TPS_KEY_RATE_LIMIT_PER_MINUTE; 0 turns it off). A refused request is not
 * counted, and retry-after is when the sliding count falls below the quota: a client that waits it
 * out gets in, whereas counting refusals (or pointing at the minute's edge, where the previous
 * minute still counts almost whole) would refuse it again.
 */
export const rateLimit = (counter: QuotaCounter, perMinute: number): Middleware => async (ctx, next) => {
  if (perMinute > 0) {
    const waitMs = await counter.take(`quota\u0000${ctx.state.principal.keyId}`, 60, perMinute, Date.now());
    if (waitMs > 0) {
      const retryAfter = String(Math.ceil(waitMs / 1000));
      throw new ApiError('rate_limited', `this key's quota of ${perMinute} requests per minute is spent`, undefined, { 'retry-after': retryAfter });
    }
  }
  await next();
};
