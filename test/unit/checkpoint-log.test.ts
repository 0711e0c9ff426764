import test from 'ava';
import { CheckpointLog } from '../../src/store/checkpointLog.js';

// Instants in milliseconds, as performance.now() gives them; far from 0 like a running process's.
const T = 1_000_000;

test('a span counts only the part of it inside the window asked about, per kind', (t) => {
  const log = new CheckpointLog();
  log.begin('bulk', T + 10)(T + 20);
  log.begin('bulk', T + 30)(T + 35);
  log.begin('catchup', T + 12)(T + 18);

  t.is(log.overlap('bulk', T, T + 100), 15);
  t.is(log.overlap('bulk', T + 15, T + 32), 7); // 5 of the first, 2 of the second
  t.is(log.overlap('bulk', T + 20, T + 30), 0); // between the two
  t.is(log.overlap('bulk', T + 40, T + 50), 0);
  t.is(log.overlap('catchup', T, T + 15), 3);
  t.is(log.overlap('filesync', T, T + 100), 0);
});

test('a span still running counts up to the end of the window', (t) => {
  const log = new CheckpointLog();
  const end = log.begin('catchup', T + 10);
  t.is(log.overlap('catchup', T + 5, T + 25), 15);
  end(T + 12);
  t.is(log.overlap('catchup', T + 5, T + 25), 2);
});

test('the log keeps the last 64 spans of a kind; one overwritten before it ended takes nothing from its successor', (t) => {
  const log = new CheckpointLog();
  const first = log.begin('bulk', T);
  for (let i = 1; i <= 64; i++) log.begin('bulk', T + i * 10)(T + i * 10 + 1);
  // The 64 newer spans filled the ring, so the first (still running) is gone.
  t.is(log.overlap('bulk', T, T + 10), 0);
  first(T + 5);
  t.is(log.overlap('bulk', T + 640, T + 641), 1, 'the span in its slot kept its own end');
  t.is(log.overlap('bulk', T, T + 1000), 64);
});

test('span logs work from its start until it settles, failed or not', async (t) => {
  const log = new CheckpointLog();
  const start = performance.now();
  t.is(await log.span('bulk', async () => 'copied', start), 'copied');
  await t.throwsAsync(log.span('filesync', async () => Promise.reject(new Error('gone')), start), { message: 'gone' });
  const later = performance.now() + 60_000;
  for (const kind of ['bulk', 'filesync'] as const) {
    const ran = log.overlap(kind, start, later);
    t.true(ran > 0 && ran < 60_000, `${kind} was logged, and ended when its work settled: ${ran} ms`);
  }
});
