/**
 * Group commit: events that arrive while a transaction is open wait for the next one, so many
 * concurrent evaluations share one commit (and one fsync). Each caller's promise settles when the
 * transaction holding its event has committed, or rejects if it failed: an answer is never sent
 * for an event that is not stored.
 */
export class GroupCommitter<T> {
  private pending: { item: T; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  private scheduled = false;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxBatch: number,
    private readonly maxDelayMs: number,
  ) {}

  append(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.maxBatch && !this.flushing) void this.flush();
      else this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    // With no delay, the batch is whatever arrived during this turn of the event loop.
    const run = () => {
      this.scheduled = false;
      void this.flush();
    };
    if (this.maxDelayMs > 0) setTimeout(run, this.maxDelayMs);
    else setImmediate(run);
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.pending.length === 0) return;
    this.flushing = true;
    const batch = this.pending.splice(0, this.maxBatch);
    try {
      await this.write(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.flushing = false;
      // What arrived during this commit has already waited a whole commit: it goes at once, as the
      // next batch. (Waiting maxDelayMs again only added latency: under load the commit itself,
      // an fsync, is the window in which the next batch gathers.)
      if (this.pending.length) void this.flush();
    }
  }

  /** Resolves once everything appended so far is committed (or failed). */
  async drain(): Promise<void> {
    while (this.pending.length || this.flushing) await new Promise((r) => setTimeout(r, 1));
  }
}
