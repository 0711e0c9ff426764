import type { ServerResponse } from 'node:http';
import type { EventFilter } from '../store/eventFilter.js';
import { matchesFilter } from '../store/eventFilter.js';
import type { KnexEventStore, StoredEvent } from '../store/eventStore.js';
import { encodeCursor } from './cursor.js';
import type { EventHub, Listener } from './hub.js';
import { toPublicEvent } from './publicEvent.js';

export interface StreamOptions {
  /** Events a live client may have queued before it is paused and left to catch up from the store. */
  maxQueue: number;
  /** Events per catch-up page read from the store. */
  pageSize: number;
  /** A comment line this often, so proxies and clients see the connection is alive. */
  heartbeatMs: number;
  /** A client that takes no data for this long is disconnected; it resumes with Last-Event-ID. */
  stallMs: number;
  /** Reconnection delay suggested to EventSource clients. */
  retryMs: number;
}

// One SSE frame per event, built once however many clients receive it.
const frames = new WeakMap<StoredEvent, string>();
function frameOf(e: StoredEvent): string {
  let frame = frames.get(e);
  if (frame === undefined) {
    frame = `id: ${encodeCursor(e.seq)}\ndata: ${JSON.stringify(toPublicEvent(e))}\n\n`;
    frames.set(e, frame);
  }
  return frame;
}

/**
 * One GET /api/events/stream connection. It is either catching up (reading its missed events from
 * the store, at the pace the client reads them) or live (taking events from the hub into a bounded
 * queue). A live client whose queue overflows drops the queue and catches up from the last event
 * it was actually sent, so being slow costs it latency, never events, and costs others nothing.
 */
export class StreamSubscriber implements Listener {
  /** Every matching event with seq at or below this has been written to the client. */
  private position = 0;
  private mode: 'catchup' | 'live' = 'catchup';
  private queue: StoredEvent[] = [];
  private closed = false;
  private wakeUp: (() => void) | undefined;
  private releaseDrain: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Settles when the stream has stopped and no store read of it is in flight. */
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly res: ServerResponse,
    private readonly hub: EventHub,
    private readonly store: KnexEventStore,
    readonly environment: string,
    private readonly filter: EventFilter,
    private readonly options: StreamOptions,
  ) {}

  /**
   * Positions the stream before a byte is sent, so a store failure is still an ordinary error
   * answer, and so that once the client has the headers, every later commit reaches it. Without a
   * cursor the stream starts at the hub's head: from now on.
   */
  async open(resumeAfter: number | undefined): Promise<void> {
    this.res.once('close', () => this.stop());
    this.hub.attach(this);
    try {
      this.position = resumeAfter ?? (await this.hub.ready());
    } catch (err) {
      this.stop();
      throw err;
    }
  }

  /** Sends the headers and serves the stream until the client leaves or the hub closes. */
  serve(): void {
    if (this.closed) return;
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    this.res.write(`retry: ${this.options.retryMs}\n: connected\n\n`);
    this.heartbeat = setInterval(() => {
      if (this.res.writableLength === 0) this.res.write(': heartbeat\n\n');
    }, this.options.heartbeatMs);
    // A store failure mid-stream ends the stream; the client resumes from its Last-Event-ID.
    this.done = this.run()
      .catch(() => undefined)
      .finally(() => this.end());
  }

  offer(events: readonly StoredEvent[]): void {
    if (this.mode !== 'live' || this.closed) return;
    for (const e of events) if (e.seq > this.position && matchesFilter(this.filter, e)) this.queue.push(e);
    if (this.queue.length > this.options.maxQueue) {
      // Too slow to keep up: stop queueing and catch up from the store at its own pace.
      this.queue = [];
      this.mode = 'catchup';
      this.hub.pause(this);
    }
    this.wake();
  }

  end(): void {
    this.stop();
    if (!this.res.writableEnded) this.res.end();
  }

  private stop(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    this.hub.detach(this);
    this.wake();
    this.releaseDrain?.();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      if (this.mode === 'catchup') await this.catchUp();
      else if (this.queue.length) await this.send(this.queue.shift()!);
      else await new Promise<void>((resolve) => (this.wakeUp = resolve));
    }
  }

  /** Sends what the client missed, page by page, then joins the hub exactly where it stopped. */
  private async catchUp(): Promise<void> {
    while (!this.closed) {
      const head = await this.hub.ready();
      for (;;) {
        const page = await this.store.page(this.environment, this.filter, { order: 'asc', after: this.position, upTo: head, limit: this.options.pageSize });
        for (const e of page) {
          if (this.closed) return;
          await this.send(e);
        }
        if (page.length < this.options.pageSize || this.closed) break;
      }
      // Synchronous from here: if the hub has read nothing past head, joining now loses nothing.
      if (this.closed || this.hub.head !== head) continue;
      this.position = Math.max(this.position, head);
      this.goLive();
      return;
    }
  }

  private goLive(): void {
    if (this.closed) return;
    this.mode = 'live';
    this.hub.join(this);
  }

  private async send(e: StoredEvent): Promise<void> {
    if (this.closed) return;
    const flushed = this.res.write(frameOf(e));
    this.position = Math.max(this.position, e.seq);
    if (!flushed) await this.drained();
  }

  /** Waits until the client has taken the buffered data; gives up on a stalled client. */
  private drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(stall);
        this.res.off('drain', done);
        this.res.off('close', done);
        this.releaseDrain = undefined;
        resolve();
      };
      this.releaseDrain = done;
      const stall = setTimeout(() => {
        this.res.destroy();
        done();
      }, this.options.stallMs);
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  private wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.();
  }
}
