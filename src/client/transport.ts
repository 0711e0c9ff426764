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
  let retryAfterSeconds: number | undefined;
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
    retryAfterSeconds = retryAfter(res.headers);
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
      retryAfterSeconds,
    });
  } catch (err) {
    if (err instanceof TpsError) throw err;
    // Once the headers arrived, the error keeps their status (and retry-after): a 429 or a 4xx whose
    // body stalls or breaks is still that answer, and TpsError.unavailable decides from it first.
    const answered = { status: status || undefined, requestId, retryAfterSeconds };
    if (timedOut) {
      const message = status === 0 ? `TPS did not answer within ${config.timeoutMs} ms` : `TPS answered HTTP ${status}, but its body did not arrive within ${config.timeoutMs} ms`;
      throw new TpsError({ code: 'timeout', message, ...answered, cause: err });
    }
    if (req.signal?.aborted) throw abortedError(err, requestId, answered.status);
    const reason = err instanceof Error ? err.message : String(err);
    const message = status === 0 ? `Could not reach TPS at ${config.baseUrl}: ${reason}` : `TPS answered HTTP ${status}, but its body could not be read: ${reason}`;
    throw new TpsError({ code: 'network_error', message, ...answered, cause: err });
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener('abort', onCallerAbort);
  }
}
