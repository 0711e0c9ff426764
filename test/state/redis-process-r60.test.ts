import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { generateKey } from '../../src/auth/keys.js';
import { samples } from '../core/evaluate-suite.js';
import { logLines } from '../helpers/processes.js';
import { runningServer, startScript, type ScriptProcess } from '../helpers/script.js';
import { dropRedisPrefix, get, post, REDIS_TEST_URL, unique } from '../helpers/tps.js';
import { BOUND_MS, redisProxy, until, within } from '../helpers/redisProxy.js';

// The real server (src/server.ts) in a process of its own: a Redis connection's errors go through
// the service's logger (JSON on stdout, at LOG_LEVEL), never as ioredis's own stack traces on
// stderr, and never with the URL's password; SIGTERM stops it while Redis is silent.

const SECRET = 'r60-not-to-be-logged';
const UNREACHABLE = `redis://:${SECRET}@127.0.0.1:1`;

function folder(t: ExecutionContext): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-r60-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function stopped(t: ExecutionContext, server: ScriptProcess): void {
  t.teardown(() => server.stop('SIGKILL'));
}

/** A port free now, for a server that logs nothing to say which it took (LOG_LEVEL=silent). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('LOG_LEVEL=silent with Redis unreachable: nothing is printed, on stdout or stderr', async (t) => {
  const port = await freePort();
  const server = startScript('src/server.ts', {
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DATABASE_URL: `sqlite:${path.join(folder(t), 'tps.sqlite')}`,
    REDIS_URL: UNREACHABLE,
    TPS_EVALUATE_THREAD: 'true',
    TPS_WATCH_CONFIG: 'false',
    // Pinned, so that no first keys are printed.
    TPS_SECRET_KEY: generateKey('secret'),
  });
  stopped(t, server);
  // Up (ready, with its Redis reported unreachable), then a few reconnection attempts more. Polled
  // with a pause: the server starts on the same few cores.
  let readyz: Awaited<ReturnType<typeof get>> | undefined;
  const deadline = Date.now() + 60_000;
  while (!readyz && Date.now() < deadline) {
    readyz = await get(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
    if (!readyz) await sleep(50);
  }
  t.is(readyz?.status, 200);
  t.deepEqual(readyz?.body.state, { status: 'unreachable', backend: 'redis' });
  await new Promise((r) => setTimeout(r, 1500));
  t.is(server.stderr, '');
  t.is(server.stdout, '');
  t.is(await server.stop('SIGTERM'), 0);
});

test('Redis unreachable: each connection logs one JSON line (the HTTP thread and the evaluation thread), without the password', async (t) => {
  const server = await runningServer({
    DATABASE_URL: `sqlite:${path.join(folder(t), 'tps.sqlite')}`,
    REDIS_URL: UNREACHABLE,
    TPS_EVALUATE_THREAD: 'true',
    TPS_WATCH_CONFIG: 'false',
  });
  stopped(t, server);
  const msg = 'shared state (Redis) unreachable; reconnecting';
  await within(server.logged(new RegExp(`"msg":"${msg.replace(/[()]/g, '\\$&')}"`, 'g'), 2), BOUND_MS, 'two outage lines');
  // Reconnection attempts go on (a few a second): they are not logged again.
  await new Promise((r) => setTimeout(r, 1500));
  const lines = logLines(server.stdout, msg);
  t.is(lines.length, 2, server.stdout);
  t.deepEqual(lines.map((l) => l.thread ?? 'http').sort(), ['http', 'tps-eval']);
  for (const l of lines) t.is(l.err.code, 'ECONNREFUSED');
  t.false(server.stdout.includes(SECRET));
  t.false(server.stderr.includes('[ioredis]'), server.stderr);
  t.is(await server.stop('SIGTERM'), 0);
  t.false(server.stderr.includes('[ioredis]'), server.stderr);
});

for (const thread of [false, true]) {
  test(`[${thread ? 'evaluation thread' : 'HTTP thread'}] SIGTERM with a request waiting on a silent Redis: it is answered 503 and the server exits`, async (t) => {
    const proxy = await redisProxy(REDIS_TEST_URL);
    const redisPrefix = `tps-test-r60:${unique()}:`;
    const secretKey = generateKey('secret');
    t.teardown(async () => {
      proxy.resume();
      await proxy.close();
      await dropRedisPrefix(redisPrefix);
    });
    const server = await runningServer({
      DATABASE_URL: `sqlite:${path.join(folder(t), 'tps.sqlite')}`,
      REDIS_URL: proxy.url,
      TPS_REDIS_PREFIX: redisPrefix,
      TPS_EVALUATE_THREAD: String(thread),
      TPS_WATCH_CONFIG: 'false',
      TPS_SECRET_KEY: secretKey,
      TPS_ENVIRONMENT: 'test',
    });
    stopped(t, server);
    const url = `http://127.0.0.1:${server.port}/api/evaluate`;
    const payment = samples.payment(0, `fin_${unique()}`);
    t.is((await within(post(url, payment, secretKey), BOUND_MS, 'evaluate')).status, 200);

    proxy.silence();
    const inFlight = post(url, payment, secretKey);
    await until(() => proxy.waiting() > 0, BOUND_MS, 'the request reaching Redis');
    server.signal('SIGTERM');
    t.is((await within(server.exited, BOUND_MS, 'the exit after SIGTERM')).code, 0);
    const res = await inFlight;
    t.is(res.status, 503);
    t.is(res.body.error.code, 'state_unavailable');
  });
}
