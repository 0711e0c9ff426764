import { Worker } from 'node:worker_threads';
import type { AiAssessment, ErrorCode, ErrorDetail } from '../api/types.js';
import { ApiError } from '../api/errors.js';
import { AwaitingReplies } from '../lib/awaitingReplies.js';
import type { Advisor } from '../ai/advisor.js';
import type { AdvisoryView, AiSettings } from '../ai/types.js';
import type { LoadedConfig } from '../policy/load.js';
import type { ChallengeChanges } from '../state/challenges.js';
import type { Evaluated } from './runner.js';

/** What the evaluation thread is started with (workerData). */
export interface ThreadOptions {
  source: LoadedConfig;
  redisUrl?: string;
  redisPrefix: string;
  /** TPS_REDIS_TIMEOUT_MS (state/redis.ts's default when absent). */
  redisTimeoutMs?: number;
  /** LOG_LEVEL, for the thread's own log lines (its Redis connection's outages). */
  logLevel?: string;
  challengeTtlMs: number;
}

/** An error the thread sends back: an ApiError's (`api`: its fields, and its cause as safeError gives it) or a bug's (safeError's). */
export interface ThreadError {
  api?: { code: ErrorCode; details?: ErrorDetail[]; headers?: Record<string, string>; cause?: ThreadError };
  message: string;
  name?: string;
  code?: string;
  stack?: string;
}

export type ToThread =
  | { type: 'evaluate'; id: number; environment: string; text: string }
  | { type: 'catalog'; id: number; source: LoadedConfig }
  | { type: 'assessed'; id: number; assessment: AiAssessment }
  | { type: 'revert'; id: number; changes: ChallengeChanges }
  | { type: 'gc'; id: number }
  | { type: 'close'; id: number };

/** Seconds the thread spent in garbage collection, by kind (prom-client's names), since it was last asked. */
export type GcSeconds = Partial<Record<'minor' | 'major' | 'incremental' | 'weakcb', number>>;

/** The thread's answer to one request (ToThread with an id). */
export type Reply =
  | ({ type: 'evaluated'; id: number } & Evaluated)
  | { type: 'failed'; id: number; error: ThreadError }
  | { type: 'done'; id: number }
  | { type: 'gc'; id: number; seconds: GcSeconds };

export type FromThread =
  | { type: 'ready' }
  | Reply
  | { type: 'replies'; replies: Reply[] }
  | { type: 'assess'; id: number; view: AdvisoryView; settings: AiSettings };

/**
 * An error from the thread, rebuilt in the main thread: a bug's, logged with its request id (the
 * client sees internal_error), or an ApiError's cause, logged as an outage's.
 */
export class ThreadFailure extends Error {
  declare readonly code?: string;
  constructor(e: ThreadError) {
    super(e.message);
    this.name = e.name ?? 'Error';
    if (e.code !== undefined) this.code = e.code;
    if (e.stack) this.stack = `${this.name}: ${e.message}\n${e.stack}`;
  }
}

/** The evaluation thread's name on Linux, where every thread of a process is otherwise "node": for `top -H`, `ps -T` and the benchmark's split by thread. */
export const THREAD_NAME = 'tps-eval';

// Left to V8, the thread's heap sized its young generation like the main thread's (heap ~55 MB)
// and the process ended a run at ~187 MB of RSS; with 8 MB, ~160 MB (heap ~45 MB), for more (and
// shorter) scavenges in the evaluation thread only.
const YOUNG_GENERATION_MB = 8;

// A thread that was ready for at least this long died of something other than how it starts.
const YOUNG_DEATH_MS = 1000;
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * How long to wait before starting the successor of the `youngDeaths`-th thread in a row that
 * died young: a single crash is mended at once, so that it costs only what was in flight; a thread
 * that keeps dying as it starts backs off (1 s, 2 s, 4 s, ... 30 s) instead of looping.
 */
export const restartDelayMs = (youngDeaths: number): number =>
  youngDeaths <= 1 ? 0 : Math.min(1000 * 2 ** (youngDeaths - 2), MAX_RESTART_DELAY_MS);

// From source (tests, `npm run dev`) the thread's module is TypeScript: tsx registers itself in the
// thread first, as it does not follow a process into its worker threads.
function spawn(options: ThreadOptions): Worker {
  const url = new URL(`./threadMain${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);
  const common = { workerData: options, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } };
  if (!url.pathname.endsWith('.ts')) return new Worker(url, common);
  const code = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); });`;
  return new Worker(code, { eval: true, ...common });
}

/**
 * The evaluation thread: validation, facts, risk, policy, decision and the event's row run there,
 * with the step-up challenges and velocity counts (in that thread's memory, or in Redis). The main
 * thread keeps HTTP, keys, the advisor and the store, so an answer's CPU is split between two cores
 * instead of queueing on one. A thread that dies is started again; what was in flight fails.
 */
export class EvaluationThread {
  /** Undefined between a thread's end and its successor's start. */
  private worker: Worker | undefined;
  /** `evaluation`: an answer the reply-group metric counts (a reload's or a close's reply is not). */
  private readonly pending = new AwaitingReplies<{ resolve: (m: Reply) => void; reject: (err: Error) => void; evaluation: boolean }>();
  private nextId = 0;
  private closing = false;
  /** Threads in a row that died before being ready for YOUNG_DEATH_MS. */
  private youngDeaths = 0;
  /** When a successor held back by restartDelayMs starts. */
  private restartAt = 0;
  /** Whether a thread was ever ready: one that never was is the start-up's failure (`ready` rejects), not a crash to mend. */
  private everReady = false;
  /** Settles once the first thread has compiled its configuration, or failed to. */
  readonly ready: Promise<void>;

  /**
   * `onFailure` hears of a thread that threw or stopped, or of a successor that could not be created; it is started again either way.
   * `onReplies` hears how many answers each of the thread's messages carried (a metric).
   */
  constructor(
    private options: ThreadOptions,
    private readonly advisor: Advisor,
    private readonly onFailure: (err: Error) => void,
    private readonly onReplies: (count: number) => void = () => undefined,
  ) {
    this.ready = this.start();
  }

  private start(): Promise<void> {
    let worker: Worker;
    try {
      worker = spawn(this.options);
    } catch (err) {
      // Thrown at once (workerData that cannot be cloned, say): no thread, so no exit will come to
      // mend it. A successor's is mended here, as a thread that died young; the first is start-up's.
      if (this.everReady) this.mend(err as Error, true);
      return Promise.reject(err as Error);
    }
    let readyAt: number | undefined;
    this.worker = worker;
    return new Promise((resolve, reject) => {
      worker.on('message', (m: FromThread) => {
        if (m.type === 'ready') {
          readyAt = Date.now();
          this.everReady = true;
          return resolve();
        }
        if (m.type === 'assess') return void this.assess(worker, m.id, m.view, m.settings);
        if (m.type === 'replies') {
          this.onReplies(m.replies.length);
          for (const r of m.replies) this.settle(r);
        } else {
          if (this.pending.get(m.id)?.evaluation) this.onReplies(1);
          this.settle(m);
        }
      });
      // An uncaught error ends the thread: it is reported once, with the exit that follows.
      let thrown: Error | undefined;
      worker.on('error', (err) => void (thrown = err));
      worker.on('exit', (code) => {
        const gone = thrown ?? new Error(`the evaluation thread stopped (exit code ${code})`);
        reject(gone);
        this.worker = undefined;
        for (const p of this.pending.takeAll()) p.reject(gone);
        if (this.closing || !this.everReady) return;
        this.mend(gone, readyAt === undefined || Date.now() - readyAt < YOUNG_DEATH_MS);
      });
    });
  }

  /** Reports a thread that is gone and starts its successor, at once or after restartDelayMs. */
  private mend(gone: Error, young: boolean): void {
    this.onFailure(gone);
    this.youngDeaths = young ? this.youngDeaths + 1 : 0;
    const delay = restartDelayMs(this.youngDeaths);
    const again = () => void (this.closing || this.start().catch(() => undefined));
    if (delay === 0) return again();
    this.restartAt = Date.now() + delay;
    setTimeout(again, delay).unref();
  }

  /** 0 while a thread runs or starts; else the whole seconds (at least 1) until a held-back one starts. */
  readonly heldBackSeconds = (): number =>
    this.worker || this.closing ? 0 : Math.max(1, Math.ceil((this.restartAt - Date.now()) / 1000));

  /** Stops the thread as a crash would (what was in flight fails, a new one starts): for tests of that path. */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  private settle(reply: Reply): void {
    this.pending.take(reply.id)?.resolve(reply);
  }

  private send(message: ToThread): Promise<Reply> {
    const worker = this.worker;
    if (!worker) {
      // Only while a thread that keeps dying young is held back: the client may come back.
      const seconds = String(this.heldBackSeconds());
      return Promise.reject(new ApiError('evaluation_unavailable', `the evaluation thread is starting again; retry in ${seconds} s`, undefined, { 'retry-after': seconds }));
    }
    return new Promise((resolve, reject) => {
      this.pending.add(message.id, { resolve, reject, evaluation: message.type === 'evaluate' });
      worker.postMessage(message);
    });
  }

  private async assess(worker: Worker, id: number, view: AdvisoryView, settings: AiSettings): Promise<void> {
    // Advisor.assess never throws: a failure is an assessment with status error. The answer goes to
    // the thread that asked, never to a successor that reuses its ids.
    const assessment = await this.advisor.assess(view, settings);
    if (worker === this.worker) worker.postMessage({ type: 'assessed', id, assessment } satisfies ToThread);
  }

  /** The answer and the event to commit; a client's mistake rejects as its ApiError. */
  async evaluate(environment: string, text: string): Promise<Evaluated> {
    const m = await this.send({ type: 'evaluate', id: this.nextId++, environment, text });
    if (m.type === 'evaluated') return m;
    const error = (m as Extract<Reply, { type: 'failed' }>).error;
    const api = error.api;
    // The cause is for the log (an outage's, as in middleware.ts), as it would be without the thread.
    throw api ? new ApiError(api.code, error.message, api.details, api.headers, api.cause && new ThreadFailure(api.cause)) : new ThreadFailure(error);
  }

  /** Undoes an evaluation's changes to the challenges in the thread's store (its event was not committed). */
  async revert(changes: ChallengeChanges): Promise<void> {
    const m = await this.send({ type: 'revert', id: this.nextId++, changes });
    if (m.type === 'failed') throw new ThreadFailure(m.error);
  }

  /** The thread's garbage collection since the last call (for /metrics: its heap is not the HTTP thread's). */
  async gcSince(): Promise<GcSeconds> {
    const m = await this.send({ type: 'gc', id: this.nextId++ });
    return m.type === 'gc' ? m.seconds : {};
  }

  /** A new configuration: evaluations that already started finish on the one they read. */
  async setCatalog(source: LoadedConfig): Promise<void> {
    // The held-back successor starts from it (the HTTP thread has compiled this source).
    if (!this.worker) return void (this.options = { ...this.options, source });
    const m = await this.send({ type: 'catalog', id: this.nextId++, source });
    if (m.type === 'failed') throw new ThreadFailure(m.error);
    // Only a source the thread took: a successor must not start from one it refused.
    this.options = { ...this.options, source };
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.send({ type: 'close', id: this.nextId++ }).catch(() => undefined);
    await this.worker?.terminate();
  }
}
