/**
 * How long the primary waits before starting a replacement worker again after one failed to start
 * (its store unreachable, say): 1 s, doubling with each failure in a row up to 30 s, and back to
 * 1 s once a worker listens. A cause that lasts is retried and logged, not spun on.
 */
export class RestartBackoff {
  private failures = 0;

  constructor(
    private readonly firstMs = 1000,
    private readonly maxMs = 30_000,
  ) {}

  /** The wait before the next attempt, counting this failure. */
  next(): number {
    return Math.min(this.maxMs, this.firstMs * 2 ** Math.min(this.failures++, 30));
  }

  reset(): void {
    this.failures = 0;
  }
}
