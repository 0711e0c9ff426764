import { MemoryChallengeStore, type ChallengeStore } from './challenges.js';
import { MemoryVelocityCounter, type QuotaCounter, type VelocityCounter } from './counters.js';
import { connectRedis, RedisChallengeStore, redisAnswers, RedisVelocityCounter, type ConnectOptions } from './redis.js';

/** Whether the state answers, for /readyz: in-process state always does. */
export interface StateHealth {
  status: 'ok' | 'unreachable';
  backend: 'redis' | 'memory';
}

export interface State {
  /** Policies' velocity counts and the keys' API quotas. */
  counters: VelocityCounter & QuotaCounter;
  challenges: ChallengeStore;
  /** Redis: a PING, bounded by the command timeout. */
  health(): Promise<StateHealth>;
  close(): Promise<void>;
}

const IN_MEMORY: StateHealth = Object.freeze({ status: 'ok', backend: 'memory' });
const REDIS_OK: StateHealth = Object.freeze({ status: 'ok', backend: 'redis' });
const REDIS_DOWN: StateHealth = Object.freeze({ status: 'unreachable', backend: 'redis' });

/** Velocity counts and step-up challenges: in Redis when a URL is given (shared by every process), else in this thread. */
export function openState(redisUrl: string | undefined, redisPrefix: string, options: ConnectOptions = {}): State {
  if (!redisUrl) {
    const counters = new MemoryVelocityCounter();
    const challenges = new MemoryChallengeStore();
    return { counters, challenges, health: async () => IN_MEMORY, close: async () => void (await Promise.all([counters.close(), challenges.close()])) };
  }
  const redis = connectRedis(redisUrl, options);
  const counters = new RedisVelocityCounter(redis, redisPrefix);
  const challenges = new RedisChallengeStore(redis, redisPrefix);
  return {
    counters,
    challenges,
    health: async () => ((await redisAnswers(redis)) ? REDIS_OK : REDIS_DOWN),
    async close() {
      await Promise.all([counters.close(), challenges.close()]);
      redis.disconnect();
    },
  };
}
