import fs from 'node:fs';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { ApiError } from '../api/errors.js';
import type { AiAssessment } from '../api/types.js';
import type { Advisor } from '../ai/advisor.js';
import { advisoryPort } from '../ai/port.js';
import { createLogger, safeError } from '../http/logger.js';
import { compiledCatalog } from '../policy/catalog.js';
import { openState } from '../state/open.js';
import { prepareEvent } from '../store/eventWrites.js';
import { evaluateBody } from './body.js';
import { Evaluator } from './evaluator.js';
import { Outbox } from './outbox.js';
import { answerOf } from './runner.js';
import { THREAD_NAME, type FromThread, type GcSeconds, type Reply, type ThreadError, type ThreadOptions, type ToThread } from './thread.js';

// The evaluation thread (thread.ts): its own catalog, compiled from the source the main thread
// loaded, its own state, and the advisor reached through the main thread.
const port = parentPort!;
try {
  fs.writeFileSync('/proc/thread-self/comm', THREAD_NAME);
} catch {
  // No writable /proc (not Linux): the thread keeps its name.
}
const options = workerData as ThreadOptions;
const reply = (m: FromThread) => port.postMessage(m);

// At most this many replies leave in one message (outbox.ts).
const GROUP_MAX = 8;
const outbox = new Outbox<Reply>((replies) => reply(replies.length === 1 ? replies[0]! : { type: 'replies', replies }), GROUP_MAX);

let catalog = compiledCatalog(options.source);
// Its Redis connection's outages are logged from here, at the service's level: they are this connection's own.
const state = openState(options.redisUrl, options.redisPrefix, {
  timeoutMs: options.redisTimeoutMs,
  logger: options.redisUrl ? createLogger(options.logLevel ?? 'info').child({ thread: THREAD_NAME }) : undefined,
});
const assessing = new Map<number, (a: AiAssessment) => void>();
let nextAssessment = 0;
const advisor: Pick<Advisor, 'assess'> = {
  assess: (view, settings) =>
    new Promise((resolve) => {
      const id = nextAssessment++;
      assessing.set(id, resolve);
      reply({ type: 'assess', id, view, settings });
    }),
};

// No `record`: each evaluation's event goes back with its answer, and the main thread commits it
// before answering.
const evaluator = new Evaluator({
  catalog: () => catalog,
  counters: state.counters,
  challenges: state.challenges,
  advisor: advisoryPort(advisor),
  challengeTtlMs: options.challengeTtlMs,
});

// This thread's heap is its own, which prom-client's nodejs_gc_* (in the HTTP thread) does not see;
// at full load it collects about twice as long as the HTTP thread (bench/ROUNDS.md, 28th round).
const GC_KINDS: Record<number, keyof GcSeconds> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let gcSeconds: GcSeconds = {};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = GC_KINDS[(entry as unknown as { detail: { kind: number } }).detail.kind];
    if (kind) gcSeconds[kind] = (gcSeconds[kind] ?? 0) + entry.duration / 1000;
  }
}).observe({ entryTypes: ['gc'] });

// An outage's cause (Redis's error) goes along for the HTTP thread's log, through safeError as
// every logged error: its message and code, never a command's arguments or a payload value.
const failure = (err: unknown): ThreadError =>
  err instanceof ApiError
    ? { api: { code: err.code, details: err.details, headers: err.headers, ...(err.cause === undefined ? {} : { cause: safeError(err.cause) }) }, message: err.message }
    : safeError(err);

async function evaluate(id: number, environment: string, text: string): Promise<void> {
  try {
    const { response, event, challenges } = await evaluateBody(evaluator, environment, text);
    // `challenges` only when there are some: most replies carry no such key to clone.
    const evaluated: Reply = { type: 'evaluated', id, answer: answerOf(response), event: prepareEvent(event) };
    if (challenges) evaluated.challenges = challenges;
    outbox.push(evaluated);
  } catch (err) {
    outbox.push({ type: 'failed', id, error: failure(err) });
  }
}

port.on('message', (m: ToThread) => {
  switch (m.type) {
    case 'evaluate':
      return void evaluate(m.id, m.environment, m.text);
    case 'assessed':
      assessing.get(m.id)?.(m.assessment);
      return void assessing.delete(m.id);
    case 'catalog':
      try {
        catalog = compiledCatalog(m.source);
        return reply({ type: 'done', id: m.id });
      } catch (err) {
        return reply({ type: 'failed', id: m.id, error: safeError(err) });
      }
    case 'revert':
      return void evaluator.revert(m.changes).then(
        () => reply({ type: 'done', id: m.id }),
        (err: unknown) => reply({ type: 'failed', id: m.id, error: safeError(err) }),
      );
    case 'gc': {
      const seconds = gcSeconds;
      gcSeconds = {};
      return reply({ type: 'gc', id: m.id, seconds });
    }
    case 'close':
      return void state.close().finally(() => reply({ type: 'done', id: m.id }));
  }
});
reply({ type: 'ready' });
