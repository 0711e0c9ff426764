import http from 'node:http';
import type net from 'node:net';
import test from 'ava';
import { paced } from '../../bench/paced.js';
import { ANSWERS_CSV_HEADER, answersCsv, phaseSplit } from '../../bench/split.js';

// The paced driver against a real HTTP server: what it counts as queueing behind the server (every
// connection waiting for an answer) against its own lateness, so that a phase's split does not
// blame the driver for the server's backlog.
//
// Driver and server share this process, so the tests run one at a time: each is timed alone, not
// against its neighbours' timers. Other test files still load the machine (CI once stalled this
// process for 0.9 s), so every delay a test relies on is well past such a stall.

const TIMING = 'evaluate;dur=0.1, commit;dur=0.1, total;dur=0.2';

/**
 * A server whose answer to the i-th request (from 0) waits delayMs(i, ms since the first request)
 * ms, with timing(i) as its Server-Timing header.
 */
async function unevenServer(
  delayMs: (i: number, sinceFirstMs: number) => number,
  timing: (i: number) => string = () => TIMING,
): Promise<{ port: number; close(): Promise<void> }> {
  let i = 0;
  let first: number | undefined;
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      first ??= performance.now();
      const n = i++;
      setTimeout(() => {
        res.setHeader('server-timing', timing(n));
        res.end('{}');
      }, delayMs(n, performance.now() - first));
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { port: (s.address() as net.AddressInfo).port, close: () => new Promise((resolve) => s.close(() => resolve())) };
}

const server = (delayMs: number) => unevenServer(() => delayMs);

const request = Buffer.from('POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');
/** n keep-alive connections, each sending `request`. */
const connections = (n: number) => Array.from({ length: n }, () => [request]);

test.serial('a request that waits for a free connection is counted as queued, apart from the driver being late', async (t) => {
  // One connection, answers taking 40 ms, a request due every 10 ms: three of four wait for the connection.
  const slow = await server(40);
  t.teardown(() => slow.close());
  const result = await paced(slow.port, connections(1), 100, 1);
  t.is(result.ok, 100);
  const split = phaseSplit(result.latencies, result.parts)!;
  // The backlog grows by 30 ms per request: the queue is most of each answer's latency.
  t.true(split.all.queued > 100, JSON.stringify(split.all));
  t.true(split.all.queued <= split.all.driver + 0.01, JSON.stringify(split.all));
  // What is not queueing is the driver's timer: small against a backlog of seconds (on a loaded CI
  // machine its mean was 8.8 ms against 2,058 ms queued).
  t.true(split.all.driver - split.all.queued < Math.max(5, split.all.queued / 100), JSON.stringify(split.all));
});

test.serial('with a connection free for every request, nothing is queued', async (t) => {
  const fast = await server(0);
  t.teardown(() => fast.close());
  // 128 connections for 100 requests a second: one is free for every request even when a loaded
  // test machine stalls this process (driver and server) for a second.
  const result = await paced(fast.port, connections(128), 100, 1);
  t.is(result.ok, 100);
  const split = phaseSplit(result.latencies, result.parts)!;
  t.true(split.all.queued < 0.05, JSON.stringify(split.all));
  t.true(split.all.driver >= split.all.queued, JSON.stringify(split.all));
});

test.serial('a stall that holds every answer behind it is one episode of the slowest 1%', async (t) => {
  // Requests arriving 300–700 ms in are all answered at 2,700 ms: ~200 late answers, due one after
  // another, the slowest held 2 s or more, far longer than a loaded test machine's stalls (0.9 s seen).
  const stalling = await unevenServer((_, since) => (since >= 300 && since < 700 ? 2700 - since : 0));
  t.teardown(() => stalling.close());
  const result = await paced(stalling.port, connections(64), 500, 1);
  t.is(result.ok, 500);
  const split = phaseSplit(result.latencies, result.parts)!;
  t.is(split.episodes.count, 1, JSON.stringify(split.episodes));
  t.is(split.episodes.largest.answers, split.slowest.answers);
  // Within the stall, whose first answers are held longest; a range, since a loaded machine's
  // stall can shift which of them are the slowest 1%.
  t.true(split.episodes.largest.atMs >= 250 && split.episodes.largest.atMs < 700, JSON.stringify(split.episodes));
  t.true(split.episodes.largest.maxMs >= 2000, JSON.stringify(split.episodes));
});

test.serial('answers late each on their own are as many episodes as answers', async (t) => {
  // Every 50th request (one each 100 ms at 500/s) waits 2.5 s, longer than a loaded test machine's
  // stalls; the rest are answered at once. All ten may be held at once, on 64 connections.
  const spread = await unevenServer((i) => (i % 50 === 25 ? 2500 : 0));
  t.teardown(() => spread.close());
  const result = await paced(spread.port, connections(64), 500, 1);
  t.is(result.ok, 500);
  const split = phaseSplit(result.latencies, result.parts)!;
  t.true(split.slowest.answers >= 5, JSON.stringify(split.slowest));
  t.is(split.episodes.count, split.slowest.answers, JSON.stringify(split.episodes));
  t.is(split.episodes.largest.answers, 1);
});

test.serial('the answers over the target: how many, and how many of them waited beside a bulk checkpoint', async (t) => {
  // Every tenth request waits 30 ms, six times the target and long past a loaded machine's usual
  // jitter, and its commit ran beside a bulk; the rest are answered at once, with no bulk.
  const late = (i: number) => i % 10 === 5;
  const tenth = await unevenServer(
    (i) => (late(i) ? 30 : 0),
    (i) => `${TIMING}, bulk;dur=${late(i) ? 1 : 0}, filesync;dur=0, catchup;dur=0`,
  );
  t.teardown(() => tenth.close());
  const result = await paced(tenth.port, connections(16), 500, 1);
  t.is(result.ok, 500);
  const { overTarget } = phaseSplit(result.latencies, result.parts)!;
  t.is(overTarget.ms, 5);
  // The 50 held answers at least, and others only where a loaded test machine stalled this process
  // (CI once held all 500): exactly the answers whose latency is over the target.
  t.true(overTarget.answers >= 50, JSON.stringify(overTarget));
  t.is(overTarget.answers, result.latencies.filter((ms) => ms > overTarget.ms).length);
  t.is(overTarget.percent, Math.round((1000 * overTarget.answers) / 500) / 10);
  // A tenth of all answers ran beside a bulk, and every held one did.
  t.is(overTarget.besideBulk!.all, 10);
  t.is(overTarget.besideBulk!.over, Math.round((1000 * 50) / overTarget.answers) / 10);
  // Without the checkpointer's parts (PostgreSQL), no bulk share.
  const plain = await server(0);
  t.teardown(() => plain.close());
  const quiet = await paced(plain.port, connections(4), 100, 0.5);
  t.is(phaseSplit(quiet.latencies, quiet.parts)!.overTarget.besideBulk, undefined);
});

test.serial('BENCH_ANSWERS: one CSV line per answer, with when it was due and its parts', async (t) => {
  const fast = await server(0);
  t.teardown(() => fast.close());
  const started = Date.now();
  const result = await paced(fast.port, connections(4), 200, 0.5);
  t.is(result.ok, 100);
  const lines = answersCsv('evaluate (50% of max, paced)', result.latencies, result.parts).trimEnd().split('\n');
  t.is(lines.length, 100);
  const columns = ANSWERS_CSV_HEADER.split(',');
  // The phase is quoted (its name has a comma); the figures follow it.
  const rows = lines.map((line) => {
    const [, phase, figures] = /^"((?:[^"]|"")*)",(.*)$/.exec(line)!;
    return Object.fromEntries([phase, ...figures!.split(',')].map((cell, i) => [columns[i]!, cell]));
  });
  t.true(rows.every((r) => r.phase === 'evaluate (50% of max, paced)'));
  const at = rows.map((r) => Number(r.at_ms)).sort((a, b) => a - b);
  t.is(at[0], 0);
  // Due every 5 ms over half a second.
  t.true(at[99]! > 480 && at[99]! < 500, String(at[99]));
  t.true(rows.every((r, i) => Math.abs(Number(r.latency_ms) - result.latencies[i]!) < 0.001 && r.evaluate_ms === '0.100' && r.commit_ms === '0.100'));
  // epoch_ms is at_ms moved by one offset, the phase's first due instant, which fell within the test.
  const offsets = rows.map((r) => Number(r.epoch_ms) - Number(r.at_ms));
  t.true(offsets.every((o) => Math.abs(o - offsets[0]!) < 0.01), JSON.stringify(offsets.slice(0, 3)));
  t.true(offsets[0]! >= started - 1 && offsets[0]! <= Date.now(), `${offsets[0]} against ${started}`);
  // The server sent no checkpoint parts: those cells are empty, not zero.
  t.true(rows.every((r) => r.bulk_ms === ''));
});
