import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import knexFactory from 'knex';
import { pino } from 'pino';
import { parseMetrics } from '../../bench/serverMetrics.js';
import { createTps, type Tps } from '../../src/app.js';
import { generateKey } from '../../src/auth/keys.js';
import { readSettings } from '../../src/config/env.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { deleteKeysUnder } from '../../src/state/redis.js';
import type { Logger } from '../../src/http/logger.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PG_BASE_URL = process.env.TPS_TEST_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const REDIS_TEST_URL = process.env.TPS_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export type StoreKind = 'sqlite' | 'postgres';

export interface RunningTps {
  url: string;
  secretKey: string;
  publishableKey: string;
  environment: string;
  databaseUrl: string;
  tps: Tps;
  close(): Promise<void>;
}

export interface StartOptions {
  store?: StoreKind;
  env?: Record<string, string | undefined>;
  configDir?: string;
  /** Use Redis for counters and challenges, under a key prefix of its own (or the one given). */
  redis?: boolean;
  redisPrefix?: string;
  logger?: Logger;
  /** Reuse an existing store (its URL) instead of a fresh one; the caller drops it. */
  databaseUrl?: string;
}

export const unique = () => `${Date.now().toString(36)}${crypto.randomBytes(4).toString('hex')}`;

/** A fresh store: a SQLite file in a temp folder, or a PostgreSQL schema of its own. */
export function freshDatabase(store: StoreKind): { url: string; drop(): Promise<void> } {
  if (store === 'postgres') {
    const schema = `tps_test_${unique()}`;
    return {
      url: `${PG_BASE_URL}?schema=${schema}`,
      async drop() {
        const admin = knexFactory({ client: 'pg', connection: PG_BASE_URL, pool: { min: 0, max: 1 } });
        try {
          await admin.raw('DROP SCHEMA IF EXISTS ?? CASCADE', [schema]);
        } finally {
          await admin.destroy();
        }
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-test-'));
  return { url: `sqlite:${path.join(dir, 'tps.sqlite')}`, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Boots the real service on a free loopback port with its own store and pinned keys. */
export async function startTps(options: StartOptions = {}): Promise<RunningTps> {
  const db = options.databaseUrl ? { url: options.databaseUrl, drop: async () => undefined } : freshDatabase(options.store ?? 'sqlite');
  const secretKey = generateKey('secret');
  const publishableKey = generateKey('publishable');
  const environment = 'test';
  const redisPrefix = options.redisPrefix ?? `tps-test:${unique()}:`;
  const settings = readSettings({
    DATABASE_URL: db.url,
    TPS_CONFIG_DIR: options.configDir ?? REPO_ROOT,
    TPS_ENVIRONMENT: environment,
    TPS_SECRET_KEY: secretKey,
    TPS_PUBLISHABLE_KEY: publishableKey,
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
    REDIS_URL: options.redis ? REDIS_TEST_URL : undefined,
    TPS_REDIS_PREFIX: redisPrefix,
    ...options.env,
  });
  let tps: Tps;
  try {
    tps = await createTps(settings, { logger: options.logger });
  } catch (err) {
    await db.drop();
    throw err;
  }
  const { url } = await tps.listen(0, '127.0.0.1');
  return {
    url,
    secretKey,
    publishableKey,
    environment,
    databaseUrl: db.url,
    tps,
    async close() {
      await tps.close();
      if (options.redis) await dropRedisPrefix(redisPrefix);
      await db.drop();
    },
  };
}

export const dropRedisPrefix = (prefix: string): Promise<void> => deleteKeysUnder(REDIS_TEST_URL, prefix);

/** A logger whose lines (JSON text, one per entry) are kept for a test to read. */
export function capturedLogs(level: string): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: pino({ level }, sink) as unknown as Logger, lines };
}

/**
 * TPS's counts (velocity windows, key quotas) are estimated from two fixed buckets of `seconds`
 * (src/state/counters.ts) and read one or more below the exact count when a burst crosses a
 * bucket's edge, so a test that counts up to a limit first waits out the bucket's last `marginMs`.
 */
export async function awayFromBucketEdge(seconds: number, marginMs: number): Promise<void> {
  const left = seconds * 1000 - (Date.now() % (seconds * 1000));
  if (left < marginMs) await new Promise((r) => setTimeout(r, left + 50));
}

/** The sample payments policy's own velocity window, as the service compiles it, once away from its bucket's edge. */
export async function awayFromVelocityEdge(marginMs = 15_000): Promise<{ seconds: number; max: number }> {
  const window = loadCatalog(REPO_ROOT).policies.get('payments')!.serviceWindow!;
  await awayFromBucketEdge(window.seconds, marginMs);
  return window;
}

/** POSTs JSON with the given key; returns status, headers and parsed body. */
export async function post(url: string, body: unknown, key?: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

export async function get(url: string, key?: string) {
  const res = await fetch(url, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* non-JSON bodies (metrics) stay text */
  }
  return { status: res.status, headers: res.headers, body: body as any };
}

const THREAD_GC = 'tps_evaluation_thread_gc_seconds_total{kind="';
/** The evaluation thread's garbage collection on /metrics, seconds by kind, read as the benchmark reads a scrape. */
export function threadGcByKind(metricsText: string): Record<string, number> {
  return Object.fromEntries([...parseMetrics(metricsText)].filter(([k]) => k.startsWith(THREAD_GC)).map(([k, v]) => [k.slice(THREAD_GC.length, -'"}'.length), v]));
}
