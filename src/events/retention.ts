import type { Logger } from '../http/logger.js';
import type { KnexEventStore } from '../store/eventStore.js';

export interface RetentionOptions {
  /** TPS_EVENT_RETENTION_DAYS: events older than this are deleted; 0 keeps everything. */
  days: number;
  /** How often a pruning pass runs. */
  intervalMs: number;
  /** Events deleted per transaction: short transactions, so evaluate's commits slip in between. */
  batch: number;
  /** Pause between batches, leaving the store to the evaluate path. */
  pauseMs: number;
  logger?: Logger;
  now?: () => number;
}

const DAY_MS = 86_400_000;

/** TPS_EVENT_RETENTION_DAYS: deletes old events in bounded batches on a timer, off the request path. */
export class RetentionPruner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;

  constructor(
    private readonly store: KnexEventStore,
    private readonly options: RetentionOptions,
  ) {}

  start(): void {
    if (this.options.days <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.runOnce().catch((err) => this.options.logger?.warn({ err }, 'event retention pass failed')), this.options.intervalMs);
    this.timer.unref();
  }

  /** One pass over every environment; resolves with the number of events deleted. */
  runOnce(): Promise<number> {
    if (this.options.days <= 0) return Promise.resolve(0);
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<number> {
    const cutoff = (this.options.now ?? Date.now)() - this.options.days * DAY_MS;
    let total = 0;
    for (const environment of await this.store.environments()) {
      for (;;) {
        if (this.stopped) return total;
        const deleted = await this.store.prune(environment, cutoff, this.options.batch);
        total += deleted;
        if (deleted < this.options.batch) break;
        await new Promise((resolve) => setTimeout(resolve, this.options.pauseMs));
      }
    }
    if (total) this.options.logger?.info({ deleted: total, before: new Date(cutoff).toISOString() }, 'event retention pruned old events');
    return total;
  }
}
