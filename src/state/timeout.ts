/**
 * How long a Redis command, or connecting to Redis, may take by default (TPS_REDIS_TIMEOUT_MS):
 * Redis answers in well under a millisecond, so a second without an answer is an outage. Here,
 * not in redis.ts, so that reading the settings does not load the Redis client.
 */
export const REDIS_TIMEOUT_MS = 1000;
