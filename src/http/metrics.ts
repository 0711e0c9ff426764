import client from 'prom-client';
import type { Middleware } from './middleware.js';

/** The service's Prometheus registry; each TPS instance owns one, so tests never share counters. */
export function createMetrics() {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'tps_' });
  const requests = new client.Counter({ name: 'tps_http_requests_total', help: 'HTTP requests by route and status', labelNames: ['route', 'status'], registers: [registry] });
  const duration = new client.Histogram({
    name: 'tps_http_request_duration_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['route'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const decisions = new client.Counter({ name: 'tps_decisions_total', help: 'Evaluate decisions by operation and decision', labelNames: ['operation', 'decision'], registers: [registry] });
  const commitBatch = new client.Histogram({
    name: 'tps_event_commit_batch_size',
    help: 'Events per group-commit transaction',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
    registers: [registry],
  });
  const commitFailures = new client.Counter({ name: 'tps_event_commit_failures_total', help: 'Group-commit transactions that failed', registers: [registry] });
  // Every evaluate answer waits for its commit, and a SQLite checkpoint holds the writer meanwhile:
  // these two are where an answer's latency goes beyond its own CPU.
  const storeBuckets = [0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
  const commitSeconds = new client.Histogram({
    name: 'tps_event_commit_seconds',
    help: 'Duration of a group commit of evaluate events, from the batch leaving the queue to its commit',
    buckets: storeBuckets,
    registers: [registry],
  });
  const checkpointSeconds = new client.Histogram({
    name: 'tps_sqlite_checkpoint_seconds',
    help: "Duration of a SQLite WAL checkpoint that held the writer's connection: the catch-up, queued between two commits (SQLite stores only)",
    buckets: storeBuckets,
    registers: [registry],
  });

  // Which way `auto` went moves evaluate's throughput by machine (bench/ROUNDS.md, thirteenth round).
  const evaluatesInThread = new client.Gauge({
    name: 'tps_evaluation_thread',
    help: 'Whether evaluate runs in the evaluation thread (1) or in the HTTP thread (0): TPS_EVALUATE_THREAD as resolved',
    registers: [registry],
    // Across workers (src/cluster/metrics.ts): each resolves it alike.
    aggregator: 'first',
  });

  // A cluster worker's SQLite events go through the primary (src/cluster/eventCommits.ts); which
  // process writes them is the first thing to know when its commits are slow.
  const eventWriter = new client.Gauge({
    name: 'tps_event_writer',
    help: 'Which process commits the events this process answers for: 1 on writer="self", or on writer="primary" in a SQLite cluster worker',
    labelNames: ['writer'],
    registers: [registry],
    aggregator: 'first',
  });

  const observe = (): Middleware => async (ctx, next) => {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route = (ctx as { routerPath?: string; _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      requests.inc({ route, status: String(ctx.status) });
      duration.observe({ route }, Number(process.hrtime.bigint() - start) / 1e9);
    }
  };
  const threadReplies = new client.Histogram({
    name: 'tps_evaluation_thread_replies_per_message',
    help: 'Answers per message from the evaluation thread: those it evaluated in one turn, in groups of at most eight',
    // One bucket per size: the groups are small, and a group of exactly eight (the cut) shows.
    buckets: [1, 2, 3, 4, 5, 6, 7, 8],
    registers: [registry],
  });
  // A thread that crashes is started again and its evaluations in flight fail with a 500; the log
  // says so once each time, but only a count shows a service that keeps losing its thread.
  const threadFailures = new client.Counter({
    name: 'tps_evaluation_thread_failures_total',
    help: 'Evaluation threads that threw or stopped, or successors that could not be created; each is started again (the evaluations a thread held failed)',
    registers: [registry],
  });
  return { registry, requests, duration, decisions, commitBatch, commitFailures, commitSeconds, checkpointSeconds, evaluatesInThread, eventWriter, threadReplies, threadFailures, observe };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** How long a scrape waits for the evaluation thread's answer (below). */
export const THREAD_GC_WAIT_MS = 1000;

/**
 * The evaluation thread's garbage collection, asked of the thread at each scrape: prom-client's
 * tps_nodejs_gc_duration_seconds sees only the HTTP thread's heap. A scrape waits for the thread
 * at most THREAD_GC_WAIT_MS, so that a thread that does not answer cannot hold /metrics; a late
 * answer is counted when it comes, for the next scrape. A thread starting again loses what it had
 * not yet reported.
 */
export function registerThreadGc(registry: client.Registry, since: () => Promise<Partial<Record<string, number>>>): void {
  new client.Counter({
    name: 'tps_evaluation_thread_gc_seconds_total',
    help: 'Time the evaluation thread spent in garbage collection, by kind (as tps_nodejs_gc_duration_seconds, which is the HTTP thread only)',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      const counted = since().then(
        (seconds) => {
          for (const [kind, s] of Object.entries(seconds)) this.inc({ kind }, s ?? 0);
        },
        () => undefined,
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([counted, new Promise((resolve) => (timer = setTimeout(resolve, THREAD_GC_WAIT_MS)))]);
      clearTimeout(timer);
    },
  });
}

/** What `/metrics` answers: this process's registry, or with TPS_WORKERS the whole service's (src/cluster/metrics.ts). */
export type MetricsText = () => Promise<string>;
