/**
 * TPS's own velocity count per environment, actor and operation. A sliding window estimated from
 * two fixed buckets (the current one plus the previous one weighted by how much of it still
 * overlaps the window): O(1) memory per key, and the same arithmetic in process and in Redis.
 */
export interface VelocityCounter {
  /** Counts one action under `key` and returns the actions in the last `windowSeconds`, this one included. */
  hit(key: string, windowSeconds: number, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

export function slidingCount(current: number, previous: number, windowMs: number, nowMs: number): number {
  const overlap = 1 - (nowMs % windowMs) / windowMs;
  return current + Math.floor(previous * overlap);
}

/** The in-process counter drops idle keys once every this many hits. */
export const SWEEP_EVERY_HITS = 10_000;

export class MemoryVelocityCounter implements VelocityCounter {
  private readonly buckets = new Map<string, { windowMs: number; bucket: number; current: number; previous: number }>();
  private hits = 0;

  async hit(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const windowMs = windowSeconds * 1000;
    const bucket = Math.floor(nowMs / windowMs);
    let entry = this.buckets.get(key);
    // A key whose policy changed its window starts over: its buckets counted another width.
    if (!entry || entry.windowMs !== windowMs || entry.bucket < bucket - 1) entry = { windowMs, bucket, current: 0, previous: 0 };
    else if (entry.bucket === bucket - 1) entry = { windowMs, bucket, current: 0, previous: entry.current };
    entry.current += 1;
    this.buckets.set(key, entry);
    if (++this.hits % SWEEP_EVERY_HITS === 0) this.sweep(nowMs);
    return slidingCount(entry.current, entry.previous, windowMs, nowMs);
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
