/**
 * A phase's server CPU split by thread, per 2xx answer: the HTTP thread (the process's main
 * thread), the evaluation thread (by the name it gives itself, src/evaluate/thread.ts) and the rest
 * (libuv's pool, where SQLite's commits and checkpoints run, and V8's helpers). Earlier rounds read
 * these by hand (bench/ROUNDS.md, twenty-third and thirty-third rounds): which thread is the
 * heaviest, and how long the threads wait for a core while a vCPU may sit idle.
 */

import { THREAD_NAME } from '../src/evaluate/thread.js';
import type { ThreadCounters } from './proc.js';

const THREAD_GROUPS = ['http', 'evaluation', 'rest'] as const;
export type ThreadGroup = (typeof THREAD_GROUPS)[number];

/** Per 2xx answer: µs of CPU, and from schedstat (null without it) µs waiting for a core and times scheduled. */
export interface ThreadShare {
  cpuUs: number;
  waitUs: number | null;
  scheduled: number | null;
}

/** A group without a thread is null: no evaluation thread when evaluate runs in the HTTP thread. */
export type ThreadSplit = Record<ThreadGroup, ThreadShare | null>;

const LABELS: Record<ThreadGroup, string> = { http: 'HTTP', evaluation: 'evaluation', rest: "the rest (libuv's pool, V8's helpers)" };

const groupOf = (pid: number, tid: number, name: string): ThreadGroup => (tid === pid ? 'http' : name === THREAD_NAME ? 'evaluation' : 'rest');

const round = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * The split between two readings of threadCounters(pid). A thread started in between counts from
 * zero; one that ended in between takes its time with it (a restarted evaluation thread, say).
 */
export function threadSplit(pid: number, before: Map<number, ThreadCounters>, after: Map<number, ThreadCounters>, answers: number): ThreadSplit | null {
  if (!answers) return null;
  const sums = new Map<ThreadGroup, { cpu: number; wait: number; scheduled: number }>();
  for (const [tid, end] of after) {
    const start = before.get(tid);
    const group = groupOf(pid, tid, end.name);
    const sum = sums.get(group) ?? { cpu: 0, wait: 0, scheduled: 0 };
    sum.cpu += end.cpuSeconds - (start?.cpuSeconds ?? 0);
    // NaN without schedstat: then the group's figures are null.
    sum.wait += (end.waitSeconds ?? NaN) - (start?.waitSeconds ?? 0);
    sum.scheduled += (end.scheduled ?? NaN) - (start?.scheduled ?? 0);
    sums.set(group, sum);
  }
  const share = (group: ThreadGroup): ThreadShare | null => {
    const sum = sums.get(group);
    if (!sum) return null;
    const known = (x: number, digits: number) => (Number.isNaN(x) ? null : round(x / answers, digits));
    return { cpuUs: round((Math.max(0, sum.cpu) * 1e6) / answers, 1), waitUs: known(Math.max(0, sum.wait) * 1e6, 1), scheduled: known(Math.max(0, sum.scheduled), 2) };
  };
  return { http: share('http'), evaluation: share('evaluation'), rest: share('rest') };
}

/** One line: each group's µs of CPU an answer, then (where schedstat is kept) µs waiting for a core and times scheduled. */
export function describeThreads(split: ThreadSplit): string {
  const parts = THREAD_GROUPS.flatMap((group) => {
    const s = split[group];
    if (!s) return [];
    const waits = s.waitUs === null ? '' : ` (waited ${s.waitUs}, scheduled ${s.scheduled})`;
    return [`${LABELS[group]} ${s.cpuUs}${waits}`];
  });
  return parts.join('; ');
}
