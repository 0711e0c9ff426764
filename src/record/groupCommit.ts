import { isRowFault } from '../store/commitFailure.js';

/** An item on its way to a GroupCommitter (an evaluation under way): see GroupCommitter.expect. */
export interface Expected<T> {
  /** Appends the item it stood for. */
  append(item: T): Promise<void>;
  /** It will not come (its evaluation failed): batches stop waiting for it. */
  withdraw(): void;
}

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: events that arrive while a transaction is open wait for the next one, so many
 * concurrent evaluations share one commit (and one fsync). Each caller's promise settles when the
 * transaction holding its event has committed, or rejects if it failed: an answer is never sent
 * for an event that is not stored. A batch fails whole, whichever event failed it: where a row may
 * be at fault (isRowFault), its events are committed again one by one (settleAlone), so only the
 * faulty one's caller is refused.
 *
 * When the writer is idle, a batch waits for the items announced as on their way (expect), up to
 * maxWaitMs, rather than committing without them: a commit has a fixed cost (its sync, two
 * hand-offs) whatever its size, and the evaluations already under way would otherwise each wait
 * behind a commit of one or two events. With nothing on its way the batch goes at once, so a
 * lone evaluation waits for nothing (bench/ROUNDS.md, twenty-second round).
 */
export class GroupCommitter<T> {
  private pending: Waiting<T>[] = [];
  private flushing = false;
  private scheduled = false;
  private underway = 0;
  private waiting: NodeJS.Timeout | undefined;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxBatch: number,
    private readonly maxDelayMs: number,
    private readonly maxWaitMs = 0,
  ) {}

  append(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.maxBatch && !this.flushing) void this.flush();
      else this.schedule();
    });
  }

  /** Announces an item on its way; the batch it would join may wait for it (maxWaitMs). */
  expect(): Expected<T> {
    this.underway++;
    let settled = false;
    const arrive = () => {
      if (settled) return false;
      settled = true;
      this.underway--;
      return true;
    };
    return {
      append: (item) => {
        arrive();
        return this.append(item);
      },
      withdraw: () => {
        if (arrive()) this.schedule();
      },
    };
  }

  private schedule(): void {
    if (this.scheduled || this.flushing || this.pending.length === 0) return;
    if (this.underway > 0 && this.maxWaitMs > 0) {
      this.waiting ??= setTimeout(() => {
        this.waiting = undefined;
        void this.flush();
      }, this.maxWaitMs);
      return;
    }
    // A wait under way ends with the flush below (flush clears it).
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
    clearTimeout(this.waiting);
    this.waiting = undefined;
    this.flushing = true;
    const batch = this.pending.splice(0, this.maxBatch);
    try {
      await this.write(batch.map((p) => p.item));
      for (const p of batch) p.resolve();
    } catch (err) {
      await this.settleAlone(batch, err);
    } finally {
      this.flushing = false;
      // What arrived during this commit has already waited a whole commit: it goes at once, as the
      // next batch. (Waiting maxDelayMs again only added latency: under load the commit itself,
      // an fsync, is the window in which the next batch gathers.)
      if (this.pending.length) void this.flush();
    }
  }

  /**
   * A failed batch's items, each committed alone while the failures may be a row's own. The first
   * failure that is not (the store is down) fails the rest at once, rather than trying each.
   */
  private async settleAlone(batch: readonly Waiting<T>[], err: unknown): Promise<void> {
    let alone = batch.length > 1 && isRowFault(err);
    for (const p of batch) {
      if (!alone) {
        p.reject(err);
        continue;
      }
      try {
        await this.write([p.item]);
        p.resolve();
      } catch (itsOwn) {
        p.reject(itsOwn);
        // A row's fault is this item's alone: the next is tried all the same.
        if (!isRowFault(itsOwn)) [alone, err] = [false, itsOwn];
      }
    }
  }

  /** Resolves once everything appended so far is committed (or failed). */
  async drain(): Promise<void> {
    while (this.pending.length || this.flushing) await new Promise((r) => setTimeout(r, 1));
  }
}
