import test from 'ava';
import client from 'prom-client';
import { registerThreadGc, THREAD_GC_WAIT_MS } from '../../src/http/metrics.js';
import { threadGcByKind } from '../helpers/tps.js';

// The scrape asks the evaluation thread (src/evaluate/thread.ts) for its collections; here the
// thread's answer is a promise the test settles, to stand for a thread that is slow to answer.

test('a thread that does not answer holds a scrape for at most THREAD_GC_WAIT_MS; its late answer counts at the next', async (t) => {
  const registry = new client.Registry();
  let answer: (seconds: Record<string, number>) => void = () => undefined;
  const answers = [new Promise<Record<string, number>>((resolve) => (answer = resolve)), Promise.resolve({ minor: 0.25 })];
  registerThreadGc(registry, () => answers.shift()!);

  const start = Date.now();
  t.deepEqual(threadGcByKind(await registry.metrics()), {}, 'nothing yet to count');
  const waited = Date.now() - start;
  t.true(waited >= THREAD_GC_WAIT_MS - 50 && waited < THREAD_GC_WAIT_MS * 3, `the scrape waited ${waited} ms`);

  answer({ minor: 0.5, major: 0.125 });
  t.deepEqual(threadGcByKind(await registry.metrics()), { minor: 0.75, major: 0.125 }, 'the late answer and the next one');
});

test('a thread that cannot be asked (starting again) adds nothing and fails no scrape', async (t) => {
  const registry = new client.Registry();
  registerThreadGc(registry, () => Promise.reject(new Error('the evaluation thread is starting again')));
  const text = await registry.metrics();
  t.regex(text, /^# TYPE tps_evaluation_thread_gc_seconds_total counter$/m);
  t.deepEqual(threadGcByKind(text), {});
});
