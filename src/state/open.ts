import { MemoryChallengeStore, type ChallengeStore } from './challenges.js';
import { MemoryVelocityCounter, type QuotaCounter, type VelocityCounter } from './counters.js';
import { connectRedis, RedisChallengeStore, RedisVelocityCounter } from './redis.js';

export interface State {
  /** Policies' velocity counts and the keys' API quotas. */
  counters: VelocityCounter & QuotaCounter;
  challenges: ChallengeStore;
  close(): Promise<void>;
}

/** Velocity counts and step-up challenges: in Redis when a URL is given (shared by every process), else in this thread. */
export function openState(redisUrl: string | undefined, redisPrefix: string): State {
  if (!redisUrl) {
    const counters = new MemoryVelocityCounter();
    const challenges = new MemoryChallengeStore();
    return { counters, challenges, close: async () => void (await Promise.all([counters.close(), challenges.close()])) };
  }
  const redis = connectRedis(redisUrl);
  const counters = new RedisVelocityCounter(redis, redisPrefix);
  const challenges = new RedisChallengeStore(redis, redisPrefix);
  return {
    counters,
    challenges,
    async close() {
      await Promise.all([counters.close(), challenges.close()]);
      redis.disconnect();
    },
  };
}
