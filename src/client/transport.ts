// One HTTP exchange with TPS over plain fetch (Node 20+, workers, edge runtimes: nothing else is
// assumed). Every failure becomes a TpsError, so callers handle a single error type.

import type { ErrorBody } from '../api/types.js';
import { abortedError, TpsError } from './errors.js';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportConfig {
  baseUrl: string;
  secretKey: string;
  timeoutMs: number;
  fetch: FetchLike;
}

export interface HttpRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  signal?: AbortSignal;
}

export interface HttpAnswer<T> {
  status: number;
  body: T;
  requestId: string | undefined;
}

/** Seconds from a retry-after header (seconds or an HTTP date), or undefined if it has none. */
export function retryAfter(headers: Headers): number | undefined {
  const raw = headers.get('retry-after');
  // A blank value is no value: Number('') is 0, which would retry at once.
  if (raw === null || raw.trim() === '') return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

export async function send<T>(config: TransportConfig, req: HttpRequest): Promise<HttpAnswer<T>> {
  // Our own controller, rather than AbortSignal.timeout/any, so the caller's signal and the
  // timeout stay distinguishable and the timer also covers reading the body.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, config.timeoutMs);
  const onCallerAbort = () => controller.abort();
  req.signal?.addEventListener('abort', onCallerAbort, { once: true });
  if (req.signal?.aborted) controller.abort();

  let status = 0;
  let requestId: string | undefined;
  try {
    const headers: Record<string, string> = { authorization: `Bearer ${config.secretKey}`, accept: 'application/json' };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    const res = await config.fetch(config.baseUrl + req.path, {
      method: req.method,
      headers,
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: controller.signal,
    });
    status = res.status;
    requestId = res.headers.get('x-request-id') ?? undefined;
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok) {
      if (parsed === undefined) throw new TpsError({ code: 'invalid_response', message: `TPS answered ${status} without a JSON body`, status, requestId });
      return { status, body: parsed as T, requestId };
    }
    const error = (parsed as Partial<ErrorBody> | undefined)?.error;
    throw new TpsError({
      code: typeof error?.code === 'string' ? error.code : `http_${status}`,
      message: typeof error?.message === 'string' ? error.message : `TPS answered HTTP ${status}`,
      status,
      requestId,
      details: Array.isArray(error?.details) ? error.details : undefined,
      retryAfterSeconds: retryAfter(res.headers),
    });
  } catch (err) {
    if (err instanceof TpsError) throw err;
    if (timedOut) throw new TpsError({ code: 'timeout', message: `TPS did not answer within ${config.timeoutMs} ms`, requestId, cause: err });
    if (req.signal?.aborted) throw abortedError(err, requestId);
    // A failure after the headers arrived (body cut off) still means no usable answer.
    const message = err instanceof Error ? err.message : String(err);
    throw new TpsError({ code: 'network_error', message: `Could not reach TPS at ${config.baseUrl}: ${message}`, status: status || undefined, requestId, cause: err });
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onCallerAbort);
  }
}
