// Retry with exponential backoff and full jitter, for calls that are safe to repeat (ingest is,
// because the caller's telemetryId makes a repeat a duplicate, not a second event).

import { TpsError } from './errors.js';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 3, baseDelayMs: 200, maxDelayMs: 5_000 };

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function backoffMs(attempt: number, policy: RetryPolicy, retryAfterSeconds?: number): number {
  // The server's retry-after wins: it knows when capacity comes back.
  if (retryAfterSeconds !== undefined) return Math.min(policy.maxDelayMs, retryAfterSeconds * 1000);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export async function withRetry<T>(policy: RetryPolicy, run: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const retryable = err instanceof TpsError && err.unavailable;
      if (!retryable || attempt >= policy.retries) throw err;
      await sleep(backoffMs(attempt, policy, err.retryAfterSeconds));
    }
  }
}
