import test from 'ava';
import { Redis } from 'ioredis';
import { MemoryChallengeStore, type StoredChallenge } from '../../src/state/challenges.js';
import { stateOf, storedChallenge } from '../helpers/state.js';
import { REDIS_TEST_URL, unique } from '../helpers/tps.js';

// ChallengeStore.revert, as each store keeps challenges: in the process, and in a real Redis under
// a prefix of the test's own. It undoes what an evaluation whose event was not committed did.

const ENV = 'test';
const FP = 'fingerprint-1';

const challenge = (nowMs: number, lifeMs?: number): StoredChallenge => storedChallenge(FP, nowMs, lifeMs);

for (const kind of ['memory', 'redis'] as const) {
  test(`[${kind}] a consumed challenge put back is found again, by fingerprint and by id, and is still single use`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, undefined, now);
    t.is(used?.id, x.id);
    await challenges.revert({ consumed: used }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id);
    await challenges.revert({ consumed: used }, now);
    t.is((await challenges.consume(ENV, FP, x.id, now))?.id, x.id);
    t.is(await challenges.consume(ENV, FP, x.id, now), undefined);
  });

  test(`[${kind}] a challenge put back leaves a newer one of its transaction the one found by fingerprint`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now);
    const z = challenge(now);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, x.id, now);
    await challenges.issue(z, now);
    await challenges.revert({ consumed: used }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, z.id);
    t.is((await challenges.consume(ENV, FP, x.id, now))?.id, x.id);
  });

  test(`[${kind}] a challenge is never put back past its expiry`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now, 60_000);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, undefined, now);
    await challenges.revert({ consumed: used }, x.expiresAt);
    t.is(await challenges.consume(ENV, FP, x.id, now), undefined);
    t.is(await challenges.consume(ENV, FP, undefined, now), undefined);
  });

  test(`[${kind}] an issued challenge withdrawn is gone, by id and by fingerprint; a newer one stays`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const y = challenge(now);
    await challenges.issue(y, now);
    await challenges.revert({ issued: y }, now);
    t.is(await challenges.consume(ENV, FP, y.id, now), undefined);
    t.is(await challenges.consume(ENV, FP, undefined, now), undefined);

    const older = challenge(now);
    const newer = challenge(now);
    await challenges.issue(older, now);
    await challenges.issue(newer, now);
    await challenges.revert({ issued: older }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, newer.id);
  });

  test(`[${kind}] a retry that used one challenge and was issued another is undone whole: the first is the transaction's again`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now);
    const y = challenge(now);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, undefined, now);
    await challenges.issue(y, now);
    await challenges.revert({ consumed: used, issued: y }, now);
    t.is(await challenges.consume(ENV, FP, y.id, now), undefined);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id);
  });
}

test('[redis] a challenge put back lives out only what was left of its lifetime, its pointer too', async (t) => {
  const prefix = `tps-test:${unique()}:`;
  const { challenges } = stateOf('redis', t, prefix);
  const redis = new Redis(REDIS_TEST_URL);
  t.teardown(() => redis.disconnect());
  const issuedAt = Date.now();
  const x = challenge(issuedAt);
  await challenges.issue(x, issuedAt);
  const used = await challenges.consume(ENV, FP, undefined, issuedAt);
  // Put back as if 9 of its 10 minutes had gone by.
  const later = issuedAt + 540_000;
  await challenges.revert({ consumed: used }, later);
  const keys = await redis.keys(`${prefix}ch*`);
  t.is(keys.length, 2);
  for (const key of keys) {
    const ttl = await redis.pttl(key);
    t.true(ttl > 0 && ttl <= x.expiresAt - later, `${key}: ${ttl} ms`);
  }
});

test('[memory] the sweep every thousandth issue reads the issuing clock, so a seed or replay in the past keeps its live challenges', async (t) => {
  const challenges = new MemoryChallengeStore();
  // A year ago, as a demo seed's clock runs: every challenge is live on that clock and long expired on the wall's.
  const then = Date.now() - 365 * 86_400_000;
  const first = challenge(then);
  await challenges.issue(first, then);
  for (let i = 1; i < 1000; i++) await challenges.issue({ ...challenge(then), fingerprint: `fp_${i}` }, then);
  t.is((await challenges.consume(ENV, FP, first.id, then))?.id, first.id);
});
