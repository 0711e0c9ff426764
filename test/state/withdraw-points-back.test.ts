import test from 'ava';
import { Redis } from 'ioredis';
import type { ChallengeStore, StoredChallenge } from '../../src/state/challenges.js';
import { stateOf, storedChallenge } from '../helpers/state.js';
import { REDIS_TEST_URL, unique } from '../helpers/tps.js';

// Two concurrent identical retries of one challenge: the first uses it, the second finds it used and
// is issued another. If neither is committed, both are undone, in whichever order their failures
// come: the transaction must end as it began, its challenge found by fingerprint. In the process and
// in a real Redis under a prefix of the test's own.

const ENV = 'test';
const FP = 'fingerprint-concurrent';

const challenge = (nowMs: number, lifeMs?: number): StoredChallenge => storedChallenge(FP, nowMs, lifeMs);

/** The transaction's challenge x issued; the first retry uses it, the second finds it used and is issued y. */
async function twoRetries(challenges: ChallengeStore, now: number) {
  const x = challenge(now);
  await challenges.issue(x, now);
  const used = await challenges.consume(ENV, FP, undefined, now);
  const y = challenge(now);
  await challenges.issue(y, now);
  return { x, used, y };
}

for (const kind of ['memory', 'redis'] as const) {
  test(`[${kind}] undone in batch order (the retry that used the challenge first), the challenge is the transaction's again`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, undefined, now);
    t.is(used?.id, x.id);
    t.is(await challenges.consume(ENV, FP, undefined, now), undefined, 'the second retry finds it used');
    const y = challenge(now);
    await challenges.issue(y, now);

    await challenges.revert({ consumed: used }, now);
    await challenges.revert({ issued: y }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id);
    t.is(await challenges.consume(ENV, FP, y.id, now), undefined, 'the withdrawn one is gone');
  });

  test(`[${kind}] undone in the other order, the same`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const { x, used, y } = await twoRetries(challenges, now);
    await challenges.revert({ issued: y }, now);
    await challenges.revert({ consumed: used }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id);
  });

  test(`[${kind}] put back before the other retry was issued its challenge, the same`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const x = challenge(now);
    await challenges.issue(x, now);
    const used = await challenges.consume(ENV, FP, undefined, now);
    await challenges.revert({ consumed: used }, now);
    const y = challenge(now);
    await challenges.issue(y, now);
    await challenges.revert({ issued: y }, now);
    t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id);
  });

  test(`[${kind}] a withdrawal points back only at a put-back challenge still live`, async (t) => {
    const { challenges } = stateOf(kind, t);
    const now = Date.now();
    const { x, used, y } = await twoRetries(challenges, now);
    await challenges.revert({ consumed: used }, now);
    // Used for good, by id, by a retry that was committed.
    t.is((await challenges.consume(ENV, FP, x.id, now))?.id, x.id);
    await challenges.revert({ issued: y }, now);
    t.is(await challenges.consume(ENV, FP, undefined, now), undefined);
  });
}

test('[redis] the pointer a withdrawal gives back lives out only what was left of the put-back challenge', async (t) => {
  const prefix = `tps-test:${unique()}:`;
  const { challenges } = stateOf('redis', t, prefix);
  const redis = new Redis(REDIS_TEST_URL);
  t.teardown(() => redis.disconnect());
  const issuedAt = Date.now();
  const x = challenge(issuedAt);
  await challenges.issue(x, issuedAt);
  const used = await challenges.consume(ENV, FP, undefined, issuedAt);
  const later = issuedAt + 540_000;
  const y = challenge(later);
  await challenges.issue(y, later);
  await challenges.revert({ consumed: used }, later);
  await challenges.revert({ issued: y }, later);
  const keys = await redis.keys(`${prefix}*`);
  t.true(keys.length >= 2);
  for (const key of keys) {
    const ttl = await redis.pttl(key);
    t.true(ttl > 0 && ttl <= x.expiresAt - later, `${key}: ${ttl} ms`);
  }
  t.is((await challenges.consume(ENV, FP, undefined, later))?.id, x.id);
});
