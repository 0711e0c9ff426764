/**
 * Where a paced phase's answers spent their time, from the driver's clock and the server's
 * Server-Timing header (TPS_SERVER_TIMING): for all answers, and for the slowest 1%, whether the
 * tail is TPS's evaluation, its commit, or everything at once (a machine short of cores); and, with
 * SQLite, how much of the commit's wait SQLite's checkpointer was at work (src/store/checkpointLog.ts).
 */

import { CHECKPOINT_KINDS, type CheckpointKind } from '../src/store/checkpointLog.js';

/** Per answer, in milliseconds, index for index with the phase's latencies; NaN where a server sent no header. */
export interface AnswerParts {
  /** The instant the request was due, on the driver's clock (performance.now()). */
  due: Float64Array;
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

/**
 * The slowest 1% grouped by when they were due: an answer due within EPISODE_GAP_MS of the slow
 * one before it joins its episode. A tail of a few stalls, each holding every answer behind it,
 * reads as a few long episodes; a tail of answers each late on its own, as many episodes as
 * answers (thirty-second round).
 */
export interface Episodes {
  count: number;
  /** The episode with the most answers (the earliest of equals). */
  largest: {
    /** When its first answer was due, in milliseconds from the phase's first request. */
    atMs: number;
    /** From its first answer's due instant to its last's. */
    spanMs: number;
    answers: number;
    /** Its slowest answer's latency. */
    maxMs: number;
  };
}

export const EPISODE_GAP_MS = 50;

/** Issue 7's bound on the p99 at 50% load. */
const TARGET_MS = 5;

/**
 * The answers slower than TARGET_MS. A p99 within it allows 1% of them: a tail of 1–2% is a few
 * stalls away from the target, one of 7–9% (the thirty-third round) is the whole phase.
 */
export interface OverTarget {
  ms: number;
  answers: number;
  /** Of all answers. */
  percent: number;
  /**
   * With SQLite: the percent of these answers, and of all answers, whose commit waited while a
   * bulk checkpoint ran. Far more of the first than of the second says the bulks are in the tail,
   * not that they made it: a busy machine stretches a bulk over more commits (thirty-third round).
   */
  besideBulk?: { over: number; all: number };
}

export interface PhaseSplit {
  all: SplitMs;
  slowest: SplitMs;
  episodes: Episodes;
  overTarget: OverTarget;
}

/** The index, in ascending order, of the p-th percentile of n values (nearest rank): the table's and the split's. */
export const nearestRank = (n: number, p: number) => Math.min(n - 1, Math.ceil((p / 100) * n) - 1);

const perKind = <T>(value: (kind: CheckpointKind) => T) => Object.fromEntries(CHECKPOINT_KINDS.map((kind) => [kind, value(kind)])) as Record<CheckpointKind, T>;

export const newParts = (size: number): AnswerParts => ({
  due: new Float64Array(size),
  late: new Float64Array(size),
  queued: new Float64Array(size),
  evaluate: new Float64Array(size),
  commit: new Float64Array(size),
  total: new Float64Array(size),
  during: perKind(() => new Float64Array(size)),
});

const SERVER_TIMING = /(\w+);dur=([\d.]+)/g;

/** Stores answer i's parts; `header` is its Server-Timing value, if any. */
export function recordParts(parts: AnswerParts, i: number, due: number, late: number, queued: number, header: string | undefined): void {
  parts.due[i] = due;
  parts.late[i] = late;
  parts.queued[i] = queued;
  const found: Record<string, number> = {};
  for (const m of header?.matchAll(SERVER_TIMING) ?? []) found[m[1]!] = Number(m[2]);
  parts.evaluate[i] = found.evaluate ?? NaN;
  parts.commit[i] = found.commit ?? NaN;
  parts.total[i] = found.total ?? NaN;
  for (const kind of CHECKPOINT_KINDS) parts.during[kind][i] = found[kind] ?? NaN;
}

/** Whether each of these answers' headers said how long of its commit the checkpointer ran (SQLite's do). */
const checkpointerTimed = (indexes: number[], parts: AnswerParts) => indexes.every((i) => !Number.isNaN(parts.during.bulk[i]!));

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
    ...(checkpointerTimed(indexes, parts) && { duringCommit: perKind((kind) => round(sum((i) => parts.during[kind][i]!))) }),
  };
}

/** The split of all answers and of those at or above the p99; undefined unless every answer had the header. */
export function phaseSplit(latencies: Float64Array, parts: AnswerParts): PhaseSplit | undefined {
  const n = latencies.length;
  if (n === 0 || parts.total.subarray(0, n).some(Number.isNaN)) return undefined;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => latencies[a]! - latencies[b]!);
  const p99 = order[nearestRank(n, 99)]!;
  const slowest = order.filter((i) => latencies[i]! >= latencies[p99]!);
  return {
    all: mean(order, latencies, parts),
    slowest: mean(slowest, latencies, parts),
    episodes: episodes(slowest, latencies, parts.due.subarray(0, n)),
    overTarget: overTarget(order, latencies, parts),
  };
}

function overTarget(all: number[], latencies: Float64Array, parts: AnswerParts): OverTarget {
  const over = all.filter((i) => latencies[i]! > TARGET_MS);
  const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10);
  const besideBulk = (of: number[]) => percent(of.filter((i) => parts.during.bulk[i]! > 0).length, of.length);
  return {
    ms: TARGET_MS,
    answers: over.length,
    percent: percent(over.length, all.length),
    ...(checkpointerTimed(all, parts) && { besideBulk: { over: besideBulk(over), all: besideBulk(all) } }),
  };
}

const earliest = (due: Float64Array) => due.reduce((a, b) => Math.min(a, b), Infinity);

function episodes(slowest: number[], latencies: Float64Array, due: Float64Array): Episodes {
  const first = earliest(due);
  const byDue = [...slowest].sort((a, b) => due[a]! - due[b]!);
  const groups: number[][] = [];
  for (const i of byDue) {
    const group = groups[groups.length - 1];
    if (group && due[i]! - due[group[group.length - 1]!]! <= EPISODE_GAP_MS) group.push(i);
    else groups.push([i]);
  }
  const largest = groups.reduce((a, b) => (b.length > a.length ? b : a));
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    count: groups.length,
    largest: {
      atMs: round(due[largest[0]!]! - first),
      spanMs: round(due[largest[largest.length - 1]!]! - due[largest[0]!]!),
      answers: largest.length,
      maxMs: round(Math.max(...largest.map((i) => latencies[i]!))),
    },
  };
}

export const describeEpisodes = (e: Episodes) =>
  `${e.count} episode(s), answers due within ${EPISODE_GAP_MS} ms of one another; the largest ${e.largest.answers} answer(s) over ${e.largest.spanMs} ms from ${(e.largest.atMs / 1000).toFixed(2)} s, up to ${e.largest.maxMs} ms`;

export const describeOverTarget = (o: OverTarget) =>
  `${o.answers} answer(s) over ${o.ms} ms, ${o.percent}% of all (a p99 within ${o.ms} ms allows 1%)` +
  (o.besideBulk && o.answers > 0 ? `; ${o.besideBulk.over}% of them waited for a commit beside a bulk checkpoint, ${o.besideBulk.all}% of all answers` : '');

/** answersCsv's column names. */
export const ANSWERS_CSV_HEADER = ['phase', 'at_ms', 'epoch_ms', 'latency_ms', 'driver_ms', 'queued_ms', 'evaluate_ms', 'commit_ms', ...CHECKPOINT_KINDS.map((k) => `${k}_ms`)].join(',');

/**
 * One line per answer (BENCH_ANSWERS): when it was due (from the phase's first request, and as
 * epoch milliseconds to line it up with the server's own logs), its latency and its parts; a part
 * the server sent no header for is left empty.
 */
export function answersCsv(phase: string, latencies: Float64Array, parts: AnswerParts): string {
  const n = latencies.length;
  const first = earliest(parts.due.subarray(0, n));
  const ms = (x: number) => (Number.isNaN(x) ? '' : x.toFixed(3));
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const cells = [parts.due[i]! - first, performance.timeOrigin + parts.due[i]!, latencies[i]!, parts.late[i]!, parts.queued[i]!, parts.evaluate[i]!, parts.commit[i]!, ...CHECKPOINT_KINDS.map((k) => parts.during[k][i]!)];
    lines.push([`"${phase.replaceAll('"', '""')}"`, ...cells.map(ms)].join(','));
  }
  return lines.map((line) => `${line}\n`).join('');
}

export const describeSplit = (s: SplitMs) =>
  `${s.latency} ms = driver ${s.driver} (queued for a connection ${s.queued}) + HTTP ${s.http} + evaluation ${s.evaluation} + commit ${s.commit}` +
  (s.duringCommit ? ` (during the commit's wait: bulk checkpoint ${s.duringCommit.bulk}, file sync ${s.duringCommit.filesync}, catch-up ${s.duringCommit.catchup})` : '');
