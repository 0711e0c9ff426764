/**
 * TPS's own velocity count per environment, actor and operation. A sliding window estimated from
 * two fixed buckets (the current one plus the previous one weighted by how much of it still
 * overlaps the window): O(1) memory per key, and the same arithmetic in process and in Redis.
 */
export interface VelocityCounter {
  /** Counts one action under `key` and returns the actions in the last `windowSeconds`, this one included. */
  hit(key: string, windowSeconds: number, nowMs: number): Promise<number>;
  /** The actions counted under `key` in the last `windowSeconds`, counting none (a satisfied step-up retry's). */
  peek(key: string, windowSeconds: number, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * A quota over the same sliding window: only what it lets through is counted, so a caller that
 * waits out the answer to a refusal is let through then (unless others of the key took the room first).
 */
export interface QuotaCounter {
  /** Counts one action under `key` if fewer than `limit` are counted in the window, answering 0; else counts nothing and answers the milliseconds until one would be. */
  take(key: string, windowSeconds: number, limit: number, nowMs: number): Promise<number>;
}

export function slidingCount(current: number, previous: number, windowMs: number, nowMs: number): number {
  const overlap = 1 - (nowMs % windowMs) / windowMs;
  return current + Math.floor(previous * overlap);
}

/** The milliseconds from `nowMs` until slidingCount falls below `limit`, with nothing more counted. */
export function msUntilBelow(limit: number, current: number, previous: number, windowMs: number, nowMs: number): number {
  // Within this bucket only the previous bucket's share falls; once this bucket is full it must
  // become the previous one, whose share then falls in turn.
  const full = current >= limit;
  const start = nowMs - (nowMs % windowMs) + (full ? windowMs : 0);
  const c = full ? 0 : current;
  const p = full ? current : previous;
  // c + floor(p × overlap) < limit once p × overlap < limit − c; the float's rounding is settled a
  // millisecond at a time. At the bucket's end at the latest, c alone is the previous bucket's share.
  const end = start + windowMs;
  let t = Math.max(nowMs, start + Math.floor(windowMs * (1 - (limit - c) / p)) + 1);
  while (t < end && slidingCount(c, p, windowMs, t) >= limit) t++;
  return Math.min(t, end) - nowMs;
}

/** The in-process counter drops idle keys once every this many hits. */
export const SWEEP_EVERY_HITS = 10_000;

interface Buckets {
  windowMs: number;
  bucket: number;
  current: number;
  previous: number;
}

export class MemoryVelocityCounter implements VelocityCounter, QuotaCounter {
  private readonly buckets = new Map<string, Buckets>();
  private hits = 0;

  async hit(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const entry = this.count(key, this.at(key, windowSeconds * 1000, nowMs), nowMs);
    return slidingCount(entry.current, entry.previous, entry.windowMs, nowMs);
  }

  async peek(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const entry = this.at(key, windowSeconds * 1000, nowMs);
    return slidingCount(entry.current, entry.previous, entry.windowMs, nowMs);
  }

  async take(key: string, windowSeconds: number, limit: number, nowMs: number): Promise<number> {
    const windowMs = windowSeconds * 1000;
    const entry = this.at(key, windowMs, nowMs);
    if (slidingCount(entry.current, entry.previous, windowMs, nowMs) >= limit) return msUntilBelow(limit, entry.current, entry.previous, windowMs, nowMs);
    this.count(key, entry, nowMs);
    return 0;
  }

  /** The key's buckets as of `nowMs`, turned over as time went by (not stored until counted). */
  private at(key: string, windowMs: number, nowMs: number): Buckets {
    const bucket = Math.floor(nowMs / windowMs);
    const entry = this.buckets.get(key);
    // A key whose policy changed its window starts over: its buckets counted another width.
    if (!entry || entry.windowMs !== windowMs || entry.bucket < bucket - 1) return { windowMs, bucket, current: 0, previous: 0 };
    if (entry.bucket === bucket - 1) return { windowMs, bucket, current: 0, previous: entry.current };
    return entry;
  }

  private count(key: string, entry: Buckets, nowMs: number): Buckets {
    entry.current += 1;
    this.buckets.set(key, entry);
    if (++this.hits % SWEEP_EVERY_HITS === 0) this.sweep(nowMs);
    return entry;
  }

  // Keys idle for two windows count nothing any more; dropping them keeps memory flat. Each key is
  // read against its own window, since policies' windows differ.
  private sweep(nowMs: number): void {
    for (const [key, entry] of this.buckets) if (entry.bucket < Math.floor(nowMs / entry.windowMs) - 1) this.buckets.delete(key);
  }

  async close(): Promise<void> {
    this.buckets.clear();
  }
}
