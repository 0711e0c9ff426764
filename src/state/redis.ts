import crypto from 'node:crypto';
import { Redis } from 'ioredis';
import type { ChallengeChanges, ChallengeStore, StoredChallenge } from './challenges.js';
import { msUntilBelow, slidingCount, type QuotaCounter, type VelocityCounter } from './counters.js';
import { stateUnavailable } from '../api/errors.js';
import type { Logger } from '../http/logger.js';
import { reportOutages } from './outages.js';
import { REDIS_TIMEOUT_MS } from './timeout.js';

// Shared state for several TPS instances (REDIS_URL). Every key sits under one prefix (TPS_REDIS_PREFIX)
// so tests and deployments can share a Redis without touching each other's keys.

export interface ConnectOptions {
  /** How long a command (or connecting) may take: a Redis that does not answer is an outage like one that refuses. */
  timeoutMs?: number;
  /** Where the connection's outages are logged (once each); without one they are not. */
  logger?: Logger;
}

export function connectRedis(url: string, { timeoutMs = REDIS_TIMEOUT_MS, logger }: ConnectOptions = {}): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    lazyConnect: false,
    // A Redis that is reachable but silent (paused, partitioned, behind a proxy that holds the
    // socket) never breaks the connection, so only a timeout ends the wait: every command, the
    // queued ones too, fails then, and the request answers 503 state_unavailable.
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    // A command whose connection broke before its reply may have run: sent again on the next
    // connection it could run twice (a count counted twice, a challenge found used by its own
    // consume). It fails instead (its timeout), and the request answers 503.
    autoResendUnfulfilledCommands: false,
  });
  reportOutages(redis, url, logger);
  return redis;
}

/** Whether the connection answers a PING within its command timeout: readiness. A connection not (yet) ready does not. */
export async function redisAnswers(redis: Redis): Promise<boolean> {
  if (redis.status !== 'ready') return false;
  return redis.ping().then(
    () => true,
    () => false,
  );
}

const unavailable = (err: unknown): never => {
  throw stateUnavailable(err);
};

type Replies = [Error | null, unknown][] | null;

/** A MULTI's replies, each checked: any failure, the transaction's or one command's, is the state's outage. */
async function answered(exec: Promise<Replies>): Promise<[Error | null, unknown][]> {
  const res = await exec.catch(unavailable);
  if (!res) unavailable(new Error('redis transaction aborted'));
  for (const [err] of res!) if (err) unavailable(err);
  return res!;
}

/** Deletes every key under `prefix` (a test run's or a benchmark's), a batch at a time. */
export async function deleteKeysUnder(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

// QuotaCounter.take in one step, so that concurrent callers (of every instance) cannot all take the
// last of the room: counts only under the limit, with slidingCount's arithmetic (the same IEEE
// doubles as in JS), and answers whether it counted and both buckets' counts.
// KEYS: the current bucket, the previous one; ARGV: limit, ms into the bucket, window ms.
const TAKE = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local window = tonumber(ARGV[3])
if current + math.floor(previous * (1 - tonumber(ARGV[2]) / window)) >= tonumber(ARGV[1]) then return {0, current, previous} end
current = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], window * 2)
return {1, current, previous}`;

export class RedisVelocityCounter implements VelocityCounter, QuotaCounter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private bucketKey = (key: string, bucket: number) => `${this.prefix}v:${key}:${bucket}`;

  async hit(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const windowMs = windowSeconds * 1000;
    const bucket = Math.floor(nowMs / windowMs);
    const cur = this.bucketKey(key, bucket);
    const prev = this.bucketKey(key, bucket - 1);
    const res = await answered(this.redis.multi().incr(cur).pexpire(cur, windowMs * 2).get(prev).exec());
    return slidingCount(Number(res[0]![1]), Number(res[2]![1] ?? 0), windowMs, nowMs);
  }

  async peek(key: string, windowSeconds: number, nowMs: number): Promise<number> {
    const windowMs = windowSeconds * 1000;
    const bucket = Math.floor(nowMs / windowMs);
    const counts = (await this.redis.mget(this.bucketKey(key, bucket), this.bucketKey(key, bucket - 1)).catch(unavailable)).map((v) => Number(v ?? 0));
    // What INCR would refuse to count (hit's outage) must not read as no count at all.
    if (!counts.every(Number.isSafeInteger)) unavailable(new Error('a velocity bucket does not hold a count'));
    return slidingCount(counts[0]!, counts[1]!, windowMs, nowMs);
  }

  async take(key: string, windowSeconds: number, limit: number, nowMs: number): Promise<number> {
    const windowMs = windowSeconds * 1000;
    const bucket = Math.floor(nowMs / windowMs);
    const [counted, current, previous] = (await this.redis.eval(TAKE, 2, this.bucketKey(key, bucket), this.bucketKey(key, bucket - 1), limit, nowMs % windowMs, windowMs).catch(unavailable)) as [number, number, number];
    return counted ? 0 : msUntilBelow(limit, current, previous, windowMs, nowMs);
  }

  async close(): Promise<void> {}
}

// Uses a challenge in one step, so that of two concurrent retries only one gets it back, and a
// retry of another transaction naming it by id leaves it untouched for its own. The transaction's
// pointer goes only while it still names this challenge: a newer challenge of the same transaction
// stays reachable by fingerprint, as in MemoryChallengeStore. The transaction's put-back (WITHDRAW)
// goes too while it names this challenge: it names only a challenge still live.
// The challenge is moved, not deleted, to a used key that holds it with this use's own token for
// what was left of its life: a use whose reply is lost or late can then be undone (RESTORE). The
// used key simply expires; nothing else reads it.
// KEYS: the challenge, the transaction's pointer, its last put-back, the used key; ARGV: environment,
// fingerprint, challenge id, this use's token.
// (Every script names each key it touches in KEYS, as Redis's rules for scripts and proxies that
// route by key require. Redis Cluster is not supported: a script's keys (`ch:<id>`, `chfp:…`,
// `putback:…`) fall in different hash slots, which Cluster refuses in one script.)
const CONSUME = `
local raw = redis.call('GET', KEYS[1])
if not raw then return false end
local c = cjson.decode(raw)
if c.environment ~= ARGV[1] or c.fingerprint ~= ARGV[2] then return false end
local left = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
if left > 0 then
  redis.call('HSET', KEYS[4], 'use', ARGV[4], 'challenge', raw)
  redis.call('PEXPIRE', KEYS[4], left)
end
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
if redis.call('GET', KEYS[3]) == ARGV[3] then redis.call('DEL', KEYS[3]) end
return raw`;

// Undoes a CONSUME whose outcome its caller never learnt (its reply lost, or late past the
// timeout), if that very use ran: the used key holds its token. It is put back as revert puts back
// a consumed challenge (the pointer only if absent, the put-back key set), for what is left of its
// life. A used key that holds another use's token (a later retry's, after a put-back), or none, is
// left alone: only the use that took the challenge can return it, so it is never returned twice.
// KEYS: the challenge, the transaction's pointer, its last put-back, the used key; ARGV: the
// challenge id, the use's token.
const RESTORE = `
if redis.call('HGET', KEYS[4], 'use') ~= ARGV[2] then return 0 end
local left = redis.call('PTTL', KEYS[4])
local raw = redis.call('HGET', KEYS[4], 'challenge')
redis.call('DEL', KEYS[4])
if left < 1 then return 0 end
redis.call('SET', KEYS[1], raw, 'PX', left)
redis.call('SET', KEYS[2], ARGV[1], 'PX', left, 'NX')
redis.call('SET', KEYS[3], ARGV[1], 'PX', left)
return 1`;

// Withdraws a challenge its caller never saw (ChallengeStore.revert). The transaction's pointer, only
// while it names it (as in CONSUME), goes back to the challenge last put back while that lives, for
// what is left of its life; else it goes. The put-back key lives as long as that challenge (set
// with it, in one MULTI) and goes when it is used (CONSUME), so its own life is the challenge's.
// KEYS: the challenge, the transaction's pointer, its last put-back; ARGV: the challenge's id.
const WITHDRAW = `
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then
  local back = redis.call('GET', KEYS[3])
  local left = back and redis.call('PTTL', KEYS[3]) or -2
  if left > 0 then redis.call('SET', KEYS[2], back, 'PX', left) else redis.call('DEL', KEYS[2]) end
end
return 1`;

export class RedisChallengeStore implements ChallengeStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private idKey = (id: string) => `${this.prefix}ch:${id}`;
  private fpKey = (env: string, fp: string) => `${this.prefix}chfp:${env}:${fp}`;
  private backKey = (env: string, fp: string) => `${this.prefix}putback:${env}:${fp}`;
  private usedKey = (id: string) => `${this.prefix}chused:${id}`;

  async issue(c: StoredChallenge, nowMs: number): Promise<void> {
    const ttl = Math.max(1, c.expiresAt - nowMs);
    await answered(this.redis.multi().set(this.idKey(c.id), JSON.stringify(c), 'PX', ttl).set(this.fpKey(c.environment, c.fingerprint), c.id, 'PX', ttl).exec());
  }

  async consume(environment: string, fingerprint: string, id: string | undefined, nowMs: number): Promise<StoredChallenge | undefined> {
    const fpKey = this.fpKey(environment, fingerprint);
    const chosen = id ?? (await this.redis.get(fpKey).catch(unavailable));
    if (!chosen) return undefined;
    const keys = [this.idKey(chosen), fpKey, this.backKey(environment, fingerprint), this.usedKey(chosen)];
    const use = crypto.randomUUID();
    let raw: string | null;
    try {
      raw = (await this.redis.eval(CONSUME, 4, ...keys, environment, fingerprint, chosen, use)) as string | null;
    } catch (err) {
      // Redis may have run it (a reply lost with its connection, or late past the timeout): undone
      // if so, before the 503 is answered, so that the retry it asks for finds the challenge. On a
      // connection that is silent this waits behind the use, on the same connection, and runs when
      // Redis answers again. Should it fail too, the challenge may stay used: the retry is then
      // challenged afresh, never allowed twice.
      await this.redis.eval(RESTORE, 4, ...keys, chosen, use).catch(() => undefined);
      return unavailable(err);
    }
    if (!raw) return undefined;
    const c = JSON.parse(raw) as StoredChallenge;
    return c.expiresAt > nowMs ? c : undefined;
  }

  async revert({ consumed, issued }: ChallengeChanges, nowMs: number): Promise<void> {
    // The consumed challenge lives out only what was left of its lifetime (none: nothing to put back).
    const left = consumed ? Math.floor(consumed.expiresAt - nowMs) : 0;
    if (!issued && left < 1) return;
    // One MULTI. The withdrawal first, so that the pointer it frees can name the consumed challenge
    // again; that pointer comes back only if absent (NX): a newer challenge stays the one found by
    // fingerprint, and its withdrawal (WITHDRAW) points back at the one put back.
    const tx = this.redis.multi();
    if (issued) {
      const [env, fp] = [issued.environment, issued.fingerprint];
      tx.eval(WITHDRAW, 3, this.idKey(issued.id), this.fpKey(env, fp), this.backKey(env, fp), issued.id);
    }
    if (consumed && left >= 1) {
      const [env, fp] = [consumed.environment, consumed.fingerprint];
      // Back, it is no longer used: its used key (CONSUME) goes with the put-back.
      tx.set(this.idKey(consumed.id), JSON.stringify(consumed), 'PX', left).set(this.fpKey(env, fp), consumed.id, 'PX', left, 'NX').set(this.backKey(env, fp), consumed.id, 'PX', left).del(this.usedKey(consumed.id));
    }
    for (const [err] of (await tx.exec()) ?? []) if (err) throw err;
  }

  async close(): Promise<void> {}
}
