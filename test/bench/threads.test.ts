import test from 'ava';
import type { ThreadCounters } from '../../bench/proc.js';
import { describeThreads, threadSplit } from '../../bench/threads.js';
import { THREAD_NAME } from '../../src/evaluate/thread.js';

// The benchmark's split of the server's CPU by thread, from two readings of /proc (bench/proc.ts,
// threadCounters); its end-to-end use is in bench.test.ts.

const PID = 100;
const reading = (threads: [number, ThreadCounters][]) => new Map(threads);
const thread = (name: string, cpuSeconds: number, waitSeconds?: number, scheduled?: number): ThreadCounters => ({ name, cpuSeconds, waitSeconds, scheduled });

test('each group sums its threads per answer: a thread started in between counts from zero, one that ended is left out', (t) => {
  const before = reading([
    [PID, thread('node', 1, 0.5, 100)],
    [101, thread(THREAD_NAME, 2, 0.25, 50)],
    [102, thread('node', 3, 1, 10)],
    [103, thread('node', 9, 9, 9)], // ends before the second reading
  ]);
  const after = reading([
    [PID, thread('node', 1.2, 0.6, 300)],
    [101, thread(THREAD_NAME, 2.1, 0.29, 110)],
    [102, thread('node', 3.05, 1.02, 30)],
    [104, thread('node', 0.01, 0.03, 10)], // a pool thread started during the phase
  ]);
  const split = threadSplit(PID, before, after, 1000)!;
  t.deepEqual(split, {
    http: { cpuUs: 200, waitUs: 100, scheduled: 0.2 },
    evaluation: { cpuUs: 100, waitUs: 40, scheduled: 0.06 },
    rest: { cpuUs: 60, waitUs: 50, scheduled: 0.03 },
  });
  t.is(describeThreads(split), "HTTP 200 (waited 100, scheduled 0.2); evaluation 100 (waited 40, scheduled 0.06); the rest (libuv's pool, V8's helpers) 60 (waited 50, scheduled 0.03)");
});

test('without an evaluation thread its group is null, and without schedstat only the CPU is known', (t) => {
  const split = threadSplit(PID, reading([[PID, thread('node', 1)], [102, thread('node', 1)]]), reading([[PID, thread('node', 1.5)], [102, thread('node', 1.25)]]), 500)!;
  t.deepEqual(split, { http: { cpuUs: 1000, waitUs: null, scheduled: null }, evaluation: null, rest: { cpuUs: 500, waitUs: null, scheduled: null } });
  t.is(describeThreads(split), "HTTP 1000; the rest (libuv's pool, V8's helpers) 500");
  t.is(threadSplit(PID, reading([]), reading([[PID, thread('node', 1)]]), 0), null, 'no answers, no figures per answer');
});
