// Environment variables (CONTRACT "Running"), read once. Defaults serve a first run with no set-up.

import { WAL_CATCH_UP_MB } from '../store/checkpointer.js';
import { REDIS_TIMEOUT_MS } from '../state/timeout.js';
import { PAGE_SIZE } from '../store/db.js';
import { ENVIRONMENT_NAME_RULE, isEnvironmentName } from './environmentName.js';
import { gotValue } from './shown.js';

export interface Settings {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /** Prefix of every Redis key (TPS_REDIS_PREFIX), so deployments or test runs can share one Redis. */
  redisPrefix: string;
  /** How long a Redis command, or connecting to Redis, may take before it counts as Redis's outage (TPS_REDIS_TIMEOUT_MS). */
  redisTimeoutMs: number;
  configDir: string;
  environment: string;
  secretKey: string | undefined;
  publishableKey: string | undefined;
  maxBodyBytes: number;
  logLevel: string;
  challengeTtlSeconds: number;
  keyRateLimitPerMinute: number;
  keyCacheMs: number;
  workers: number;
  /** Evaluate in a thread of its own (TPS_EVALUATE_THREAD, src/evaluate/thread.ts); auto: with SQLite on more than one CPU. */
  evaluateThread: 'auto' | 'true' | 'false';
  commitMaxBatch: number;
  commitMaxDelayMs: number;
  /** How long an idle writer's batch may wait for the events of evaluations under way (TPS_COMMIT_WAIT_MS, record/groupCommit.ts). */
  commitWaitMs: number;
  /** SQLite's synchronous setting for commits (TPS_SQLITE_SYNC): full survives power loss, normal a crashed process. */
  sqliteSync: SqliteSync;
  /** SQLite's WAL size in MiB at which the writer catches up, holding commits for two syncs, and the WAL starts over (TPS_SQLITE_WAL_MB). */
  sqliteWalMb: number;
  /** The page size in bytes of a new SQLite file (TPS_SQLITE_PAGE_SIZE); a file keeps the one it was made with. */
  sqlitePageSize: number;
  /** A Server-Timing header on evaluate's answers (TPS_SERVER_TIMING): where the time went, for diagnosis and the benchmark. */
  serverTiming: boolean;
  ai: { url?: string; model?: string; apiKey?: string; timeoutMs?: number };
  /** Hot reload (the README section of that name): watch operations/ and rules/ (TPS_WATCH_CONFIG), debounced. SIGHUP reloads either way. */
  watchConfig: boolean;
  watchDebounceMs: number;
  /** How long changed files must stay as read before a watched reload compiles them (TPS_WATCH_SETTLE_MS); 0: no wait. */
  watchSettleMs: number;
  /** Decision Logs and Event Stream (the README section of that name). */
  events: { retentionDays: number; streamHeartbeatMs: number; streamPollMs: number; streamMaxQueue: number };
}

type Env = Record<string, string | undefined>;

export type SqliteSync = 'full' | 'normal';

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')}${gotValue(name, env[name]!)}`);
  return raw as T;
}

/** A number from the environment, or `fallback` when unset; one that fails `ok` stops start-up naming it. */
function numberIn(env: Env, name: string, fallback: number, ok: (value: number) => boolean, wanted: string): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!ok(value)) throw new Error(`${name} must be ${wanted}${gotValue(name, raw)}`);
  return value;
}

const int = (env: Env, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number =>
  numberIn(env, name, fallback, (v) => Number.isInteger(v) && v >= min && v <= max, max === Number.MAX_SAFE_INTEGER ? `an integer >= ${min}` : `an integer from ${min} to ${max}`);

// Node turns a timer's delay over 2^31-1 ms into 1 ms, so "never" would become "at once".
const TIMER_MAX_MS = 2_147_483_647;
/** Milliseconds that reach a timer. */
const ms = (env: Env, name: string, fallback: number, min = 0): number => int(env, name, fallback, min, TIMER_MAX_MS);
// A challenge's expiry must stay a real date; a step-up lasting longer than a month is a mistake, not a policy.
const CHALLENGE_TTL_MAX_SECONDS = 30 * 24 * 3600;
// Retention's cut-off must stay a real date.
const RETENTION_MAX_DAYS = 100 * 366;

const positive = (env: Env, name: string, fallback: number): number => numberIn(env, name, fallback, (v) => Number.isFinite(v) && v > 0, 'a number > 0');

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new Error(`${name} must be true or false${gotValue(name, env[name]!)}`);
}

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

function environmentName(env: Env, name: string): string | undefined {
  const raw = str(env, name);
  if (raw !== undefined && !isEnvironmentName(raw)) throw new Error(`${name} must be an environment name (${ENVIRONMENT_NAME_RULE})${gotValue(name, raw)}`);
  return raw;
}

/**
 * An http(s) URL, checked at start rather than at the first call that needs it. One with a user
 * name or password is refused: fetch refuses it too, with an error whose message holds the URL.
 */
function httpUrl(env: Env, name: string, keyVariable: string): string | undefined {
  const raw = str(env, name);
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw.trim()) ? new URL(raw.trim()) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new Error(`${name} must be an http:// or https:// URL${gotValue(name, raw)}`);
  if (url.username || url.password) throw new Error(`${name} must not carry a user name or password (user:password@); give the key in ${keyVariable}, which is sent as a bearer token`);
  return raw;
}

// pino's levels; pino itself refuses any other name (and any other case) with a message that does not name the variable.
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The address a client on this machine reaches a server bound to host and port at. */
export function localUrl(host: string, port: number): string {
  return `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`;
}

export function readSettings(env: Env = process.env): Settings {
  const aiTimeout = str(env, 'TPS_AI_TIMEOUT_MS');
  return {
    port: numberIn(env, 'PORT', 8787, (v) => Number.isInteger(v) && v >= 0 && v <= 65535, 'an integer from 0 to 65535'),
    host: str(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: str(env, 'DATABASE_URL'),
    redisUrl: str(env, 'REDIS_URL'),
    redisPrefix: str(env, 'TPS_REDIS_PREFIX') ?? 'tps:',
    redisTimeoutMs: ms(env, 'TPS_REDIS_TIMEOUT_MS', REDIS_TIMEOUT_MS, 1),
    configDir: str(env, 'TPS_CONFIG_DIR') ?? '.',
    environment: environmentName(env, 'TPS_ENVIRONMENT') ?? 'development',
    secretKey: str(env, 'TPS_SECRET_KEY'),
    publishableKey: str(env, 'TPS_PUBLISHABLE_KEY'),
    maxBodyBytes: int(env, 'TPS_MAX_BODY_BYTES', 65536, 1),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    challengeTtlSeconds: int(env, 'TPS_CHALLENGE_TTL_SECONDS', 600, 1, CHALLENGE_TTL_MAX_SECONDS),
    keyRateLimitPerMinute: int(env, 'TPS_KEY_RATE_LIMIT_PER_MINUTE', 0),
    keyCacheMs: ms(env, 'TPS_KEY_CACHE_MS', 1000),
    workers: int(env, 'TPS_WORKERS', 1, 1),
    evaluateThread: oneOf(env, 'TPS_EVALUATE_THREAD', ['auto', 'true', 'false'] as const, 'auto'),
    commitMaxBatch: int(env, 'TPS_COMMIT_MAX_BATCH', 256, 1),
    commitMaxDelayMs: ms(env, 'TPS_COMMIT_MAX_DELAY_MS', 0),
    commitWaitMs: ms(env, 'TPS_COMMIT_WAIT_MS', 1),
    sqliteSync: oneOf(env, 'TPS_SQLITE_SYNC', ['full', 'normal'] as const, 'full'),
    sqliteWalMb: positive(env, 'TPS_SQLITE_WAL_MB', WAL_CATCH_UP_MB),
    // SQLite takes powers of two from 512; an event row (~400 bytes) needs 1 KiB to fit a page.
    sqlitePageSize: numberIn(env, 'TPS_SQLITE_PAGE_SIZE', PAGE_SIZE, (v) => Number.isInteger(v) && v >= 1024 && v <= 65536 && (v & (v - 1)) === 0, 'a power of two from 1024 to 65536'),
    serverTiming: bool(env, 'TPS_SERVER_TIMING', false),
    ai: {
      url: httpUrl(env, 'TPS_AI_URL', 'TPS_AI_API_KEY'),
      model: str(env, 'TPS_AI_MODEL'),
      apiKey: str(env, 'TPS_AI_API_KEY'),
      timeoutMs: aiTimeout === undefined ? undefined : ms(env, 'TPS_AI_TIMEOUT_MS', 300, 1),
    },
    watchConfig: bool(env, 'TPS_WATCH_CONFIG', true),
    watchDebounceMs: ms(env, 'TPS_WATCH_DEBOUNCE_MS', 250),
    watchSettleMs: ms(env, 'TPS_WATCH_SETTLE_MS', 250),
    events: {
      retentionDays: int(env, 'TPS_EVENT_RETENTION_DAYS', 0, 0, RETENTION_MAX_DAYS),
      streamHeartbeatMs: ms(env, 'TPS_STREAM_HEARTBEAT_MS', 15_000, 100),
      streamPollMs: ms(env, 'TPS_STREAM_POLL_MS', 1000, 10),
      streamMaxQueue: int(env, 'TPS_STREAM_MAX_QUEUE', 1000, 1),
    },
  };
}
