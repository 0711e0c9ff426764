import { Worker } from 'node:worker_threads';
import type { Explanation } from '../api/types.js';
import { CURRENT_EXPLANATION_FORMAT } from './explanationCodec.js';

// Plain CommonJS evaluated in the worker: there is no file to resolve, so it runs the same under tsx
// and from dist. It writes what encodeExplanation writes (version byte + raw deflate with the
// dictionary and options), all of a batch into one ArrayBuffer that is transferred, not copied, back.
const WORKER_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const zlib = require('node:zlib');
const { version, options } = workerData;
parentPort.on('message', ({ id, texts }) => {
  try {
    const bodies = texts.map((text) => zlib.deflateRawSync(text, options));
    const ends = new Uint32Array(bodies.length);
    let size = 0;
    bodies.forEach((body, i) => (ends[i] = size += 1 + body.length));
    // Not from Buffer's shared pool, which cannot be transferred.
    const out = Buffer.allocUnsafeSlow(size);
    let at = 0;
    for (const body of bodies) {
      out[at] = version;
      at += 1 + body.copy(out, at + 1);
    }
    parentPort.postMessage({ id, data: out.buffer, ends }, [out.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.stack) || err) });
  }
});
`;

type Reply = { id: number; data: ArrayBuffer; ends: Uint32Array } | { id: number; error: string };

interface Pending {
  resolve(encoded: Buffer[]): void;
  reject(err: Error): void;
}

interface Running {
  thread: Worker;
  /** Requests this thread owes, by id; they die with it. */
  pending: Map<number, Pending>;
}

/**
 * encodeExplanation for batches, with the deflating on a worker thread: zlib's per-call set-up and
 * dictionary cost ~35 µs of CPU per explanation, which at full load the main thread cannot spare.
 * The main thread pays only JSON.stringify and one message each way per batch.
 */
export class ExplanationEncoder {
  private worker: Running | undefined;
  private nextId = 0;
  private closed = false;

  /** Each explanation as encodeExplanation would store it, in order. */
  async encode(explanations: readonly Explanation[]): Promise<Buffer[]> {
    if (this.closed) throw new Error('the explanation encoder is closed');
    if (explanations.length === 0) return [];
    const texts = explanations.map((e) => JSON.stringify(e));
    const { thread, pending } = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // Referenced only while it owes results: an idle encoder never keeps the process alive, and
      // a busy one is not abandoned halfway through a flush at shutdown.
      if (pending.size === 0) thread.ref();
      pending.set(id, { resolve, reject });
      thread.postMessage({ id, texts });
    });
  }

  /** Stops the worker; encodes still waiting for it reject. */
  async close(): Promise<void> {
    this.closed = true;
    await this.worker?.thread.terminate();
  }

  /** Stops the worker as a crash would, leaving the encoder open: for tests of that path. */
  async killWorker(): Promise<void> {
    await this.worker?.thread.terminate();
  }

  // After a crash the next encode starts a new worker: a crash is transient (out of memory, say),
  // and falling back to deflating in-thread would quietly put the cost back on the main thread.
  private start(): Running {
    const { version, options } = CURRENT_EXPLANATION_FORMAT;
    const thread = new Worker(WORKER_CODE, { eval: true, execArgv: [], workerData: { version, options } });
    thread.unref();
    const pending = new Map<number, Pending>();
    const worker: Running = { thread, pending };
    this.worker = worker;
    let failure: Error | undefined;
    thread.on('message', (reply: Reply) => {
      const request = pending.get(reply.id)!;
      pending.delete(reply.id);
      if (pending.size === 0) thread.unref();
      if ('error' in reply) return request.reject(new Error(`explanation encoder worker: ${reply.error}`));
      let start = 0;
      request.resolve(
        Array.from(reply.ends, (end) => {
          const encoded = Buffer.from(reply.data, start, end - start);
          start = end;
          return encoded;
        }),
      );
    });
    thread.on('error', (err) => (failure = err));
    thread.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      const err = failure ?? new Error(`explanation encoder worker exited (code ${code})`);
      for (const request of pending.values()) request.reject(err);
      pending.clear();
    });
    return worker;
  }
}
