// TPS server client: evaluate, ingest and read decision events with a secret key. Uses only
// fetch, so it runs unchanged on Node 20+, Cloudflare-style workers and edge runtimes.

import { DECISIONS } from '../api/types.js';
import type { LoggedEvent, EvaluateRequest, EventFilters, EventPage, IngestRecord, IngestResponse } from '../api/types.js';
import { TpsError } from './errors.js';
import { failureModeFor, validateFailureMode, type FailureMode, type FailureModeOption } from './failure-mode.js';
import { retryPolicy, withRetry, type RetryPolicy } from './retry.js';
import { syntheticDecision, type Evaluation } from './synthetic.js';
import { send, type FetchLike, type TransportConfig } from './transport.js';

export { TpsError, isTpsError, CLIENT_ERROR_CODES, type ClientErrorCode } from './errors.js';
export { FAILURE_MODES, DEFAULT_FAILURE_MODE, failureModeFor, type FailureMode, type FailureModeOption } from './failure-mode.js';
export { FAIL_OPEN_REASON, FAIL_CLOSED_REASON, type Evaluation } from './synthetic.js';
export type { RetryPolicy } from './retry.js';
export type * from '../api/types.js';

export interface ClientOptions {
  /** TPS base address, e.g. https://tps.internal:8787 (no endpoint path). */
  baseUrl: string;
  /** The environment's secret key, svc_sec_…; never a publishable key. */
  secretKey: string;
  /** Per-request time limit. Default 2000 ms. */
  timeoutMs?: number;
  /** What evaluate does when TPS cannot answer. Default `closed`. */
  failureMode?: FailureModeOption;
  /** Ingest retry policy. Default 3 retries, 200 ms base, 5 s cap. */
  retry?: Partial<RetryPolicy>;
  /** A fetch implementation; defaults to the global one. */
  fetch?: FetchLike;
}

export interface EvaluateOptions {
  /** Overrides the configured failure mode for this call. */
  failureMode?: FailureMode;
  signal?: AbortSignal;
}

export interface TpsClient {
  evaluate(tx: EvaluateRequest, options?: EvaluateOptions): Promise<Evaluation>;
  /** Records an already-made decision; retried on failure. A 200 duplicate counts as success. */
  ingest(record: IngestRecord, options?: { signal?: AbortSignal }): Promise<IngestResponse>;
  events: {
    list(filters?: EventFilters, options?: { signal?: AbortSignal }): Promise<EventPage>;
    get(telemetryId: string, options?: { signal?: AbortSignal }): Promise<LoggedEvent>;
    /** Every matching event, newest first, following nextCursor page by page. */
    iterate(filters?: EventFilters): AsyncGenerator<LoggedEvent>;
  };
}

function checkSecretKey(key: unknown): string {
  if (typeof key !== 'string' || key === '') throw new TypeError('TPS: createClient needs secretKey, the environment\'s svc_sec_… key');
  if (key.startsWith('svc_pub_')) {
    throw new TypeError(
      'TPS: createClient was given a publishable key (svc_pub_…). The server client needs the secret key (svc_sec_…); publishable keys belong in the browser client only.',
    );
  }
  if (!key.startsWith('svc_sec_')) throw new TypeError('TPS: secretKey must be a secret key starting with svc_sec_');
  return key;
}

function query(filters: EventFilters): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) {
    if (value !== undefined && value !== null) params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

// setTimeout's ceiling: a longer delay fires at once (with a TimeoutOverflowWarning), so every call would time out.
const MAX_TIMEOUT_MS = 2_147_483_647;

function timeoutOf(value: unknown): number {
  if (value === undefined) return 2_000;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMEOUT_MS) {
    throw new TypeError(`TPS: timeoutMs must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}, got ${String(value)}`);
  }
  return value;
}

/**
 * The base URL, checked once: fetch refuses a URL with a user name or password on every call, with
 * a message holding the password, which would land in each TpsError and synthetic failure. Neither
 * message here quotes the value.
 */
function checkBaseUrl(value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' && /^https?:\/\//.test(value) ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url) throw new TypeError('TPS: baseUrl must be an http(s) URL such as https://tps.internal:8787');
  if (url.username || url.password) {
    throw new TypeError('TPS: baseUrl must not carry a user name or password (user:password@); the secretKey is sent as a bearer token');
  }
  return (value as string).replace(/\/+$/, '');
}

export function createClient(options: ClientOptions): TpsClient {
  const secretKey = checkSecretKey(options.secretKey);
  const baseUrl = checkBaseUrl(options.baseUrl);
  validateFailureMode(options.failureMode);
  const fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const config: TransportConfig = {
    baseUrl,
    secretKey,
    timeoutMs: timeoutOf(options.timeoutMs),
    fetch: fetchImpl,
  };
  const retry: RetryPolicy = retryPolicy(options.retry);

  async function evaluate(tx: EvaluateRequest, callOptions: EvaluateOptions = {}): Promise<Evaluation> {
    const mode = callOptions.failureMode ?? failureModeFor(options.failureMode, tx.operationKey);
    try {
      const answer = await send<Evaluation>(config, { method: 'POST', path: '/api/evaluate', body: tx, signal: callOptions.signal });
      const body = answer.body;
      const meta = { status: answer.status, requestId: answer.requestId };
      // A 200 that is not an evaluation (a proxy's page, a truncated body) counts as no answer.
      if (typeof body !== 'object' || body === null || typeof body.telemetryId !== 'string') {
        throw new TpsError({ code: 'invalid_response', message: 'TPS answered 200 without an evaluation', ...meta });
      }
      // A decision this version does not know (a newer server) must never become a fail-open allow.
      if (!(DECISIONS as readonly unknown[]).includes(body.decision)) {
        throw new TpsError({ code: 'unknown_decision', message: `TPS answered the unknown decision ${JSON.stringify(body.decision)}`, ...meta });
      }
      return body;
    } catch (err) {
      if (!(err instanceof TpsError) || !err.unavailable || mode === 'throw') throw err;
      // A spent key quota never fails open: the calls that spent it may be an attacker's, driven
      // through the app's own routes, who would then be allowed every fail-open operation.
      return syntheticDecision(tx, err.status === 429 ? 'closed' : mode, err);
    }
  }

  async function ingest(record: IngestRecord, callOptions: { signal?: AbortSignal } = {}): Promise<IngestResponse> {
    const { signal } = callOptions;
    const answer = await withRetry(retry, () => send<IngestResponse>(config, { method: 'POST', path: '/api/events/ingest', body: record, signal }), signal);
    return answer.body;
  }

  const events: TpsClient['events'] = {
    async list(filters = {}, callOptions = {}) {
      return (await send<EventPage>(config, { method: 'GET', path: `/api/events${query(filters)}`, signal: callOptions.signal })).body;
    },
    async get(telemetryId, callOptions = {}) {
      const path = `/api/events/${encodeURIComponent(telemetryId)}`;
      return (await send<LoggedEvent>(config, { method: 'GET', path, signal: callOptions.signal })).body;
    },
    async *iterate(filters = {}) {
      let cursor = filters.cursor;
      do {
        const page = await events.list({ ...filters, cursor });
        yield* page.events;
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
    },
  };

  return { evaluate, ingest, events };
}
