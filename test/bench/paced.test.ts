import http from 'node:http';
import type net from 'node:net';
import test from 'ava';
import { paced } from '../../bench/paced.js';
import { phaseSplit } from '../../bench/split.js';

// The paced driver against a real HTTP server: what it counts as queueing behind the server (every
// connection waiting for an answer) against its own lateness, so that a phase's split does not
// blame the driver for the server's backlog.

async function server(delayMs: number): Promise<{ port: number; close(): Promise<void> }> {
  const s = http.createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        res.setHeader('server-timing', 'evaluate;dur=0.1, commit;dur=0.1, total;dur=0.2');
        res.end('{}');
      }, delayMs),
    );
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { port: (s.address() as net.AddressInfo).port, close: () => new Promise((resolve) => s.close(() => resolve())) };
}

const request = Buffer.from('POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}');

test('a request that waits for a free connection is counted as queued, apart from the driver being late', async (t) => {
  // One connection, answers taking 40 ms, a request due every 10 ms: three of four wait for the connection.
  const slow = await server(40);
  t.teardown(() => slow.close());
  const result = await paced(slow.port, [[request]], 100, 1);
  t.is(result.ok, 100);
  const split = phaseSplit(result.latencies, result.parts)!;
  // The backlog grows by 30 ms per request: the queue is most of each answer's latency.
  t.true(split.all.queued > 100, JSON.stringify(split.all));
  t.true(split.all.queued <= split.all.driver + 0.01, JSON.stringify(split.all));
  // What is not queueing is the driver's timer: small, against a backlog of seconds.
  t.true(split.all.driver - split.all.queued < 5, JSON.stringify(split.all));
});

test('with a connection free for every request, nothing is queued', async (t) => {
  const fast = await server(0);
  t.teardown(() => fast.close());
  const result = await paced(fast.port, [[request], [request], [request], [request]], 100, 1);
  t.is(result.ok, 100);
  const split = phaseSplit(result.latencies, result.parts)!;
  t.true(split.all.queued < 0.05, JSON.stringify(split.all));
  t.true(split.all.driver >= split.all.queued, JSON.stringify(split.all));
});
