import type { Logger } from '../http/logger.js';
import type { KnexEventStore, ReadEvent } from '../store/eventStore.js';

/** A live stream client as the hub sees it. offer() must not block: it only queues. */
export interface Listener {
  readonly environment: string;
  offer(events: readonly ReadEvent[]): void;
  /** The hub is closing: end the stream. */
  end(): void;
  /** Settles once the listener has stopped reading the store. */
  readonly done?: Promise<void>;
}

export interface HubOptions {
  /** How often the store is polled while clients are connected; catches other processes' commits. */
  pollMs: number;
  /** Events read per poll query. */
  batch: number;
  logger?: Logger;
}

/**
 * One reader of the event store per process, fanning new events out to every live stream client.
 * It polls by seq, which sees every process's commits, and polls at once when this process
 * commits (notify), so local events arrive without waiting for the timer. Clients only get events
 * pushed into their own bounded queue: a slow client never holds up the hub, other clients or the
 * evaluate path.
 *
 * `head` is the highest seq the hub has read. Writers commit in seq order (KnexEventStore), so every
 * event at or below head is committed and visible, and a joined listener is offered exactly the
 * events past the head at its join: a client that joins and then reads the store up to that head,
 * sending what it is offered meanwhile after that read, misses nothing and sees nothing twice.
 */
export class EventHub {
  head = 0;
  /** Live clients that fell behind and were switched to catching up from the store. */
  paused = 0;
  private readonly live = new Map<string, Set<Listener>>();
  private readonly attached = new Set<Listener>();
  private starting: Promise<number> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(
    private readonly store: KnexEventStore,
    private readonly options: HubOptions,
  ) {}

  /** A client connected (live or catching up): keep polling while any is. */
  attach(listener: Listener): void {
    if (this.closed) return listener.end();
    if (this.attached.size === 0) {
      // Idle until now: start from the current end of the store rather than replaying the gap.
      this.starting = undefined;
      this.timer = setInterval(() => this.notify(), this.options.pollMs);
      this.timer.unref();
    }
    this.attached.add(listener);
  }

  detach(listener: Listener): void {
    this.leave(listener);
    this.attached.delete(listener);
    if (this.attached.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** The hub's head, once it has read where the store ends. */
  ready(): Promise<number> {
    this.starting ??= this.store.head().then(
      (head) => {
        this.head = Math.max(this.head, head);
        return this.head;
      },
      (err) => {
        this.starting = undefined;
        throw err;
      },
    );
    return this.starting.then(() => this.head);
  }

  /** Start pushing events after the current head to this listener; what is at or below it, the listener reads from the store. */
  join(listener: Listener): void {
    const set = this.live.get(listener.environment) ?? new Set<Listener>();
    this.live.set(listener.environment, set.add(listener));
  }

  /** A live client overflowed its queue: stop pushing to it; it catches up from the store. */
  pause(listener: Listener): void {
    this.paused++;
    this.leave(listener);
  }

  /** Connected clients, live or catching up. */
  get clients(): number {
    return this.attached.size;
  }

  leave(listener: Listener): void {
    const set = this.live.get(listener.environment);
    if (set?.delete(listener) && set.size === 0) this.live.delete(listener.environment);
  }

  /** Something was committed (or the timer fired): read and fan out what is new. Never waits. */
  notify(): void {
    if (this.closed || this.attached.size === 0) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = this.poll().finally(() => (this.polling = undefined));
  }

  private async poll(): Promise<void> {
    try {
      await this.ready();
      do {
        this.again = false;
        const events = await this.store.since(this.head, this.options.batch);
        if (events.length === 0) break;
        this.head = events[events.length - 1]!.seq;
        this.fanOut(events);
        if (events.length === this.options.batch) this.again = true;
      } while (this.again && !this.closed);
    } catch (err) {
      if (!this.closed) this.options.logger?.warn({ err }, 'event stream poll failed; retrying on the next tick');
    }
  }

  private fanOut(events: ReadEvent[]): void {
    const byEnvironment = new Map<string, ReadEvent[]>();
    for (const e of events) {
      if (!this.live.has(e.environment)) continue;
      (byEnvironment.get(e.environment) ?? byEnvironment.set(e.environment, []).get(e.environment)!).push(e);
    }
    for (const [environment, list] of byEnvironment) for (const listener of [...(this.live.get(environment) ?? [])]) listener.offer(list);
  }

  /** Ends every stream and waits for their store reads, so the store can close after. */
  async close(): Promise<void> {
    this.closed = true;
    const listeners = [...this.attached];
    for (const listener of listeners) {
      listener.end();
      this.detach(listener);
    }
    await Promise.all([this.polling, ...listeners.map((l) => l.done)]);
  }
}
