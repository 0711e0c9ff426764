import cluster, { type Worker } from 'node:cluster';
import { AwaitingReplies } from '../lib/awaitingReplies.js';

/**
 * A worker's requests to its primary over node:cluster's channel, each matched to its reply by id
 * (eventCommits.ts, metrics.ts; answerWorkers below is the primary's side). A request on its way
 * when the primary goes fails, through `gone`, so nothing waits for a reply that cannot come.
 */
export function primaryRequests<Reply extends { id: number }>(
  isReply: (m: unknown) => m is Reply,
  gone: (why: string) => Error,
): (request: (id: number) => object) => Promise<Reply> {
  const pending = new AwaitingReplies<{ resolve: (reply: Reply) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  process.on('message', (m: unknown) => {
    if (!isReply(m)) return;
    pending.take(m.id)?.resolve(m);
  });
  process.on('disconnect', () => {
    for (const p of pending.takeAll()) p.reject(gone('the primary is gone'));
  });
  return (request) =>
    new Promise<Reply>((resolve, reject) => {
      if (!process.connected) return reject(gone('the primary is gone'));
      const id = nextId++;
      pending.add(id, { resolve, reject });
      process.send!(request(id), undefined, undefined, (err) => {
        if (err && pending.take(id)) reject(gone(`the request could not be sent to the primary: ${err.message}`));
      });
    });
}

/**
 * The primary's side: each request `isRequest` accepts, from whichever worker, answered with what
 * `handle` gives, or with `failed` saying why it threw.
 */
export function answerWorkers<Request extends { id: number }>(
  isRequest: (m: unknown) => m is Request,
  handle: (request: Request, worker: Worker) => Promise<object>,
  failed: (request: Request, message: string) => object,
): void {
  cluster.on('message', (worker, m: unknown) => {
    if (!isRequest(m)) return;
    handle(m, worker)
      .catch((err: unknown) => failed(m, (err as Error)?.message ?? String(err)))
      .then((reply) => worker.isConnected() && worker.send(reply));
  });
}

/** A guard for TPS's messages between processes, which name their kind in `tps`. */
export const isMessage =
  <M extends { tps: string }>(...kinds: M['tps'][]) =>
  (m: unknown): m is M =>
    kinds.includes((m as M | undefined)?.tps as M['tps']);
