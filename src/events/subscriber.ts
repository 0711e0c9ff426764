import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { EventFilter } from '../store/eventFilter.js';
import { matchesFilter } from '../store/eventFilter.js';
import type { KnexEventStore, ReadEvent } from '../store/eventStore.js';
import type { CursorCodec } from './cursor.js';
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

// An SSE stream cannot change its status: a revoked key's stream says why in a comment (a message
// would read as an event) and ends; the client's reconnect then gets 401 invalid_api_key.
const REVOKED = ': invalid_api_key: the API key is unknown or revoked\n\n';

// One SSE frame per event, built once however many clients receive it: they are all of its
// environment, so its id is the same cursor for each (one set of frames per service's codec).
const frames = new WeakMap<CursorCodec, WeakMap<ReadEvent, string>>();
function frameOf(cursors: CursorCodec, e: ReadEvent): string {
  let built = frames.get(cursors);
  if (built === undefined) frames.set(cursors, (built = new WeakMap()));
  let frame = built.get(e);
  if (frame === undefined) {
    frame = `id: ${cursors.encode(e.environment, e.seq)}\ndata: ${JSON.stringify(toPublicEvent(e))}\n\n`;
    built.set(e, frame);
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
  /** The position the client last got as an id: an event's, or one sent in a block of its own. */
  private told = -1;
  private mode: 'catchup' | 'live' = 'catchup';
  private queue: ReadEvent[] = [];
  private closed = false;
  private wakeUp: (() => void) | undefined;
  private releaseDrain: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** The client's connection, watched for its close while the response has no socket of its own. */
  private connection: Socket | undefined;
  private readonly onClose = () => this.stop();
  /** Settles when the stream has stopped and no store read of it is in flight. */
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly res: ServerResponse,
    private readonly hub: EventHub,
    private readonly store: KnexEventStore,
    readonly environment: string,
    private readonly filter: EventFilter,
    private readonly options: StreamOptions,
    /** The ids: cursors of this environment (events/cursor.ts). */
    private readonly cursors: CursorCodec,
    /** Whether the key the stream was opened with still stands; asked before events go out and at each heartbeat. */
    private readonly keyStands: () => Promise<boolean> = async () => true,
  ) {}

  /**
   * Positions the stream before a byte is sent, so a store failure is still an ordinary error
   * answer, and so that once the client has the headers, every later commit reaches it. Without a
   * cursor the stream starts at the hub's head: from now on. A cursor past the newest stored event
   * is a genuine one (a key cannot forge one) whose events retention deleted: the route has checked
   * it is at or below the seqs the store has issued (issuedHead), which are never issued again, so
   * the stream sends what is committed after it.
   */
  async open(resumeAfter: number | undefined): Promise<void> {
    // 'close' comes once: a client that left while the route awaited the store has had it already.
    if (this.gone()) {
      this.closed = true;
      return;
    }
    this.res.once('close', this.onClose);
    // A response pipelined behind another on the same connection gets a socket, and a 'close', only
    // once the one before it ends, which a stream never does: Node drops it silently if the
    // connection closes meanwhile, so the connection itself is watched.
    if (!this.res.socket) (this.connection = this.res.req.socket).once('close', this.onClose);
    this.hub.attach(this);
    try {
      const head = await this.hub.ready();
      this.position = resumeAfter ?? head;
    } catch (err) {
      this.stop();
      throw err;
    }
  }

  /** Sends the headers and serves the stream until the client leaves or the hub closes. */
  serve(): void {
    if (this.closed) return;
    if (this.gone()) return this.end();
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // The position as an id at once: a client that drops before its first event resumes from here,
    // rather than from a new head that skips what was committed while it was away.
    this.res.write(`retry: ${this.options.retryMs}\n${this.idLine()}: connected\n\n`);
    this.heartbeat = setInterval(() => void this.beat(), this.options.heartbeatMs);
    // A store failure mid-stream ends the stream; the client resumes from its Last-Event-ID.
    this.done = this.run()
      .catch(() => undefined)
      .finally(() => this.end());
  }

  offer(events: readonly ReadEvent[]): void {
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
    this.res.off('close', this.onClose);
    this.connection?.off('close', this.onClose);
    this.hub.detach(this);
    this.wake();
    this.releaseDrain?.();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      if (this.mode === 'catchup') await this.catchUp();
      else if (this.queue.length) await this.sendQueued();
      else await new Promise<void>((resolve) => (this.wakeUp = resolve));
    }
  }

  /** What is queued now, once the key is confirmed after it was queued: one lookup per batch, not per event. */
  private async sendQueued(): Promise<void> {
    const n = this.queue.length;
    if (!(await this.stillAuthorized())) return;
    // An overflow meanwhile emptied the queue and switched to catching up.
    for (let i = 0; i < n && this.mode === 'live' && this.queue.length && !this.closed; i++) await this.send(this.queue.shift()!);
  }

  /** A heartbeat, so an idle stream of a revoked key ends too; a failed key lookup ends it as a store failure does. */
  private async beat(): Promise<void> {
    // A client gone without a 'close' reaching the stream: ends it here, at the latest.
    if (this.gone()) return this.end();
    try {
      if (!(await this.stillAuthorized())) return;
    } catch {
      return this.end();
    }
    if (this.closed || this.res.writableLength !== 0) return;
    // Parked live (waiting for the hub, nothing queued), the stream has been offered every event up
    // to the hub's head and has written those that match, so it may resume from there: a quiet
    // filter's resume point keeps up. Anywhere else (reading the store, sending) it is only as far
    // as it has written.
    if (this.wakeUp) this.position = Math.max(this.position, this.hub.head);
    this.res.write(this.position === this.told ? ': heartbeat\n\n' : `${this.idLine()}: heartbeat\n\n`);
  }

  /**
   * An id line of the position, for a block of its own (SSE: a block with an id and no data still
   * sets the client's last event id). A position's cursor, not an event's: listed with it, the
   * Decision Logs include the event at the position itself, which was committed before it.
   */
  private idLine(): string {
    this.told = this.position;
    return `id: ${this.cursors.encodePosition(this.environment, this.position)}\n`;
  }

  /** False, the stream ended, once its key is revoked or unknown (within TPS_KEY_CACHE_MS, as every request). */
  private async stillAuthorized(): Promise<boolean> {
    if (await this.keyStands()) return !this.closed;
    if (!this.closed) {
      this.res.write(REVOKED);
      this.end();
    }
    return false;
  }

  /**
   * Sends what the client missed up to the hub's head, then joins the hub and reads from the store
   * what the hub read meanwhile. Waiting for a pass in which the hub reads nothing would never end
   * under steady commits; this way it takes one more read, however busy the store is.
   */
  private async catchUp(): Promise<void> {
    if (!(await this.readUpTo(await this.hub.ready())) || this.closed) return;
    this.mode = 'live';
    this.hub.join(this);
    // Synchronous with the join: the hub offers only events past this head, queued meanwhile.
    // An overflow during the read switches back to catching up, as for any live client.
    await this.readUpTo(this.hub.head);
  }

  /** Sends the matching events after position up to upTo, page by page; false once the stream has ended. */
  private async readUpTo(upTo: number): Promise<boolean> {
    while (this.position < upTo) {
      const page = await this.store.page(this.environment, this.filter, { order: 'asc', after: this.position, upTo, limit: this.options.pageSize });
      if (page.length && !(await this.stillAuthorized())) return false;
      for (const e of page) {
        if (this.closed) return false;
        await this.send(e);
      }
      if (this.closed) return false;
      if (page.length < this.options.pageSize) this.position = Math.max(this.position, upTo);
    }
    return !this.closed;
  }

  private async send(e: ReadEvent): Promise<void> {
    // Never twice, whichever of the store read and the hub queue holds it.
    if (this.closed || e.seq <= this.position) return;
    if (this.gone()) return this.end();
    const flushed = this.res.write(frameOf(this.cursors, e));
    this.position = this.told = e.seq;
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
      // destroy() emits no 'close' on a connection that has closed already: the stream stops here.
      const stall = setTimeout(() => {
        this.res.destroy();
        this.stop();
        done();
      }, this.options.stallMs);
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  /** Whether the client has left: its response destroyed, or its connection closed or never there. */
  private gone(): boolean {
    const socket = this.res.socket ?? this.res.req?.socket;
    return this.res.destroyed || !socket || socket.destroyed;
  }

  private wake(): void {
    const wake = this.wakeUp;
    this.wakeUp = undefined;
    wake?.();
  }
}
