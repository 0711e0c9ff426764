/**
 * Where a paced phase's answers spent their time, from the driver's clock and the server's
 * Server-Timing header (TPS_SERVER_TIMING): for all answers, and for the slowest 1%, whether the
 * tail is TPS's evaluation, its commit, or everything at once (a machine short of cores); and, with
 * SQLite, how much of the commit's wait SQLite's checkpointer was at work (src/store/checkpointLog.ts).
 */

import { CHECKPOINT_KINDS, type CheckpointKind } from '../src/store/checkpointLog.js';

/** Per answer, in milliseconds, index for index with the phase's latencies; NaN where a server sent no header. */
export interface AnswerParts {
  /** From the instant the request was due to the instant the driver wrote it. */
  late: Float64Array;
  /** Of `late`, how long it waited for a free connection, behind answers still on their way. */
  queued: Float64Array;
  evaluate: Float64Array;
  commit: Float64Array;
  /** The header's total: the evaluate handler's start to the answer's. */
  total: Float64Array;
  /** How long of the commit's wait each part of SQLite's checkpointer ran, by its Server-Timing name; NaN where the header had none. */
  during: Record<CheckpointKind, Float64Array>;
}

/** Means, in milliseconds, of how long of the commit's wait each part of SQLite's checkpointer ran (they may overlap one another). */
export type DuringCommitMs = Record<CheckpointKind, number>;

/** Means, in milliseconds: latency = driver + http + evaluation + commit. */
export interface SplitMs {
  answers: number;
  latency: number;
  /**
   * From the instant the request was due to the instant the driver wrote it: the driver's own
   * lateness (its timer, or waiting for a core), and `queued`.
   */
  driver: number;
  /** Of `driver`, the wait for a free connection: every connection was waiting for an answer, so this is queueing behind the server, not the driver's lateness. */
  queued: number;
  /** Loopback, HTTP parsing, Koa's middleware and the key check, writing the answer, reading it. */
  http: number;
  /** Reading the body and evaluating (the evaluation thread's round trip, where there is one). */
  evaluation: number;
  /** Waiting for the group commit. */
  commit: number;
  /** With SQLite: of the commit's wait, how long the checkpointer was at work. */
  duringCommit?: DuringCommitMs;
}

export interface PhaseSplit {
  all: SplitMs;
  slowest: SplitMs;
}

/** The index, in ascending order, of the p-th percentile of n values (nearest rank): the table's and the split's. */
export const nearestRank = (n: number, p: number) => Math.min(n - 1, Math.ceil((p / 100) * n) - 1);

const perKind = <T>(value: (kind: CheckpointKind) => T) => Object.fromEntries(CHECKPOINT_KINDS.map((kind) => [kind, value(kind)])) as Record<CheckpointKind, T>;

export const newParts = (size: number): AnswerParts => ({
  late: new Float64Array(size),
  queued: new Float64Array(size),
  evaluate: new Float64Array(size),
  commit: new Float64Array(size),
  total: new Float64Array(size),
  during: perKind(() => new Float64Array(size)),
});

const SERVER_TIMING = /(\w+);dur=([\d.]+)/g;

/** Stores answer i's parts; `header` is its Server-Timing value, if any. */
export function recordParts(parts: AnswerParts, i: number, late: number, queued: number, header: string | undefined): void {
  parts.late[i] = late;
  parts.queued[i] = queued;
  const found: Record<string, number> = {};
  for (const m of header?.matchAll(SERVER_TIMING) ?? []) found[m[1]!] = Number(m[2]);
  parts.evaluate[i] = found.evaluate ?? NaN;
  parts.commit[i] = found.commit ?? NaN;
  parts.total[i] = found.total ?? NaN;
  for (const kind of CHECKPOINT_KINDS) parts.during[kind][i] = found[kind] ?? NaN;
}

function mean(indexes: number[], latencies: Float64Array, parts: AnswerParts): SplitMs {
  const sum = (f: (i: number) => number) => indexes.reduce((s, i) => s + f(i), 0) / indexes.length;
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    answers: indexes.length,
    latency: round(sum((i) => latencies[i]!)),
    driver: round(sum((i) => parts.late[i]!)),
    queued: round(sum((i) => parts.queued[i]!)),
    http: round(sum((i) => latencies[i]! - parts.late[i]! - parts.total[i]!)),
    evaluation: round(sum((i) => parts.evaluate[i]!)),
    commit: round(sum((i) => parts.commit[i]!)),
    ...(indexes.every((i) => !Number.isNaN(parts.during.bulk[i]!)) && { duringCommit: perKind((kind) => round(sum((i) => parts.during[kind][i]!))) }),
  };
}

/** The split of all answers and of those at or above the p99; undefined unless every answer had the header. */
export function phaseSplit(latencies: Float64Array, parts: AnswerParts): PhaseSplit | undefined {
  const n = latencies.length;
  if (n === 0 || parts.total.subarray(0, n).some(Number.isNaN)) return undefined;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => latencies[a]! - latencies[b]!);
  const p99 = order[nearestRank(n, 99)]!;
  const slowest = order.filter((i) => latencies[i]! >= latencies[p99]!);
  return { all: mean(order, latencies, parts), slowest: mean(slowest, latencies, parts) };
}

export const describeSplit = (s: SplitMs) =>
  `${s.latency} ms = driver ${s.driver} (queued for a connection ${s.queued}) + HTTP ${s.http} + evaluation ${s.evaluation} + commit ${s.commit}` +
  (s.duringCommit ? ` (during the commit's wait: bulk checkpoint ${s.duringCommit.bulk}, file sync ${s.duringCommit.filesync}, catch-up ${s.duringCommit.catchup})` : '');
