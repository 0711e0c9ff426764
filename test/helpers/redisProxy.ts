import net from 'node:net';
import type { ExecutionContext } from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import type { Logger } from '../../src/http/logger.js';
import { dropRedisPrefix, post, REDIS_TEST_URL, startTps, unique, type RunningTps } from './tps.js';

/**
 * A TCP proxy in front of the real Redis that misbehaves as a network or a Redis does:
 * - silence(): nothing goes either way, every socket stays open and new ones are accepted (a paused
 *   Redis, a partition, a proxy holding the connection). What was sent waits, as in the kernel's
 *   buffers, and goes on at resume(), in order.
 * - silenceAt(marker): the same, from the next command to Redis whose bytes hold `marker` (held too).
 * - loseReplyTo(marker): the next command whose bytes hold `marker` reaches Redis, which runs it, but
 *   its reply is dropped and the client's connection reset (a connection lost between the two).
 * - cut(): every connection reset, new ones refused until restore() (Redis down).
 * Commands are matched as ioredis writes them: `$4\r\nincr\r\n`, or a script's text.
 */
export interface RedisProxy {
  url: string;
  silence(): void;
  silenceAt(marker: string): void;
  resume(): void;
  /** Chunks held on their way to Redis while silent: a request has reached Redis once this grows. */
  waiting(): number;
  /** Resolves once the command ran and its client's connection was reset. */
  loseReplyTo(marker: string): Promise<void>;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket;
  /** What waits while silent: to Redis, to the client. */
  held: { up: Buffer[]; down: Buffer[] };
  /** Set once the command whose reply is to be lost went to Redis: called as that reply is dropped. */
  dropReply?: () => void;
}

export async function redisProxy(redisUrl: string): Promise<RedisProxy> {
  const target = new URL(redisUrl);
  const links = new Set<Link>();
  let silent = false;
  let silentFrom: string | undefined;
  let losing: { marker: string; done: () => void } | undefined;
  let refusing = false;

  const server = net.createServer((client) => {
    if (refusing) return void client.resetAndDestroy();
    const upstream = net.connect(Number(target.port || 6379), target.hostname);
    const link: Link = { client, upstream, held: { up: [], down: [] } };
    links.add(link);
    const end = () => {
      links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.on('data', (chunk: Buffer) => {
      if (silentFrom !== undefined && chunk.includes(silentFrom)) [silent, silentFrom] = [true, undefined];
      if (silent) return void link.held.up.push(chunk);
      if (losing && chunk.includes(losing.marker)) [link.dropReply, losing] = [losing.done, undefined];
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (silent) return void link.held.down.push(chunk);
      if (link.dropReply) {
        client.resetAndDestroy();
        upstream.destroy();
        return link.dropReply();
      }
      client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;

  return {
    url: `redis://127.0.0.1:${port}`,
    silence() {
      silent = true;
    },
    silenceAt(marker) {
      silentFrom = marker;
    },
    resume() {
      silent = false;
      for (const link of links) {
        for (const chunk of link.held.up.splice(0)) link.upstream.write(chunk);
        for (const chunk of link.held.down.splice(0)) link.client.write(chunk);
      }
    },
    waiting: () => [...links].reduce((n, link) => n + link.held.up.length, 0),
    loseReplyTo(marker) {
      return new Promise((done) => void (losing = { marker, done }));
    },
    cut() {
      refusing = true;
      for (const link of links) link.client.resetAndDestroy();
    },
    restore() {
      refusing = false;
    },
    async close() {
      for (const link of links) {
        link.client.destroy();
        link.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * `promise`, or an error once `ms` passed without it settling: a test of a wait that must end
 * (a correctness bound, set far above what it takes, not a measure of speed).
 */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Until `done` holds, polled; bounded as `within`. */
export async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The bound of every wait in the Redis outage tests. What takes 1 to 2 s by design (a command's 1 s
 * timeout, another for a put-back queued behind it, a thread's shutdown) gets far more than that,
 * for a loaded CI machine: the bound catches a wait that never ends, it measures nothing.
 */
export const BOUND_MS = 15_000;

export const threadMode = (thread: boolean) => (thread ? 'evaluation thread' : 'HTTP thread');

export interface BehindProxy {
  tps: RunningTps;
  proxy: RedisProxy;
  /** The service's key prefix in the real Redis. */
  redisPrefix: string;
  /** Stops the service (once; the teardown stops it too). */
  stop(): Promise<void>;
}

/**
 * A TPS whose REDIS_URL is a proxy to the real Redis (redisProxy), under a key prefix of its own;
 * with `thread`, evaluating in the evaluation thread or the HTTP thread. Torn down with the test:
 * the proxy resumes first, so that what waits for Redis goes on and the service can stop.
 */
export async function startBehindProxy(t: ExecutionContext, options: { thread?: boolean; env?: Record<string, string>; logger?: Logger } = {}): Promise<BehindProxy> {
  const proxy = await redisProxy(REDIS_TEST_URL);
  const redisPrefix = `tps-test-r60:${unique()}:`;
  const thread = options.thread === undefined ? {} : { TPS_EVALUATE_THREAD: String(options.thread) };
  const tps = await startTps({ redisPrefix, logger: options.logger, env: { REDIS_URL: proxy.url, ...thread, ...options.env } }).catch(async (err: unknown) => {
    await proxy.close();
    throw err;
  });
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= tps.close());
  t.teardown(async () => {
    proxy.resume();
    await stop();
    await proxy.close();
    await dropRedisPrefix(redisPrefix);
  });
  if (options.thread !== undefined) t.is(Boolean(tps.tps.evaluationThread), options.thread);
  return { tps, proxy, redisPrefix, stop };
}

/** POST /api/evaluate, bounded by BOUND_MS. */
export const evaluateWithin = (tps: RunningTps, body: EvaluateRequest) => within(post(`${tps.url}/api/evaluate`, body, tps.secretKey), BOUND_MS, 'evaluate');

/** That an answer is 503 state_unavailable with retry-after: 1. */
export function assertStateUnavailable(t: ExecutionContext, res: Awaited<ReturnType<typeof post>>): void {
  t.is(res.status, 503, JSON.stringify(res.body));
  t.is(res.body?.error?.code, 'state_unavailable');
  t.is(res.headers.get('retry-after'), '1');
}
