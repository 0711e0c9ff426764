// Retry with exponential backoff and full jitter, for calls that are safe to repeat (ingest is,
// because the caller's telemetryId makes a repeat a duplicate, not a second event).

import { abortedError, TpsError } from './errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 };

/**
 * The caller's policy over the defaults, field by field: `{ retries: undefined }` keeps the default
 * rather than retrying forever. A value that is not a finite number >= 0 throws at construction.
 */
export function retryPolicy(given: Partial<RetryPolicy> | undefined): RetryPolicy {
  const policy = { ...DEFAULT_RETRY };
  for (const name of Object.keys(DEFAULT_RETRY) as (keyof RetryPolicy)[]) {
    const value: unknown = given?.[name];
    if (value === undefined) continue;
    const whole = name === 'retries';
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || (whole && !Number.isInteger(value))) {
      throw new TypeError(`TPS: retry.${name} must be ${whole ? 'a whole number' : 'a finite number'} >= 0, got ${String(value)}`);
    }
    policy[name] = value;
  }
  return policy;
}

/** Waits `ms`, or rejects with the aborted error as soon as the caller's signal fires. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(signal.reason));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal!.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** How long to wait before retry `attempt`, or undefined to give up now. */
export function backoffMs(attempt: number, policy: RetryPolicy, retryAfterSeconds?: number): number | undefined {
  // The server's retry-after wins: it knows when capacity comes back. Retrying sooner would only
  // spend the key's quota on answers sure to be 429, so past our cap we give up instead.
  if (retryAfterSeconds !== undefined) {
    const wait = retryAfterSeconds * 1000;
    return wait > policy.maxDelayMs ? undefined : wait;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Runs `run` until it succeeds or fails for good; the caller's `signal` also ends a wait between attempts. */
export async function withRetry<T>(policy: RetryPolicy, run: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const retryable = err instanceof TpsError && err.unavailable;
      if (!retryable || attempt >= policy.retries) throw err;
      const wait = backoffMs(attempt, policy, err.retryAfterSeconds);
      if (wait === undefined) throw err; // it carries retryAfterSeconds for the caller to schedule
      await sleep(wait, signal);
    }
  }
}
