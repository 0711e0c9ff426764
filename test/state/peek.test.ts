import test from 'ava';
import { Redis } from 'ioredis';
import { ApiError } from '../../src/api/errors.js';
import { stateOf } from '../helpers/state.js';
import { REDIS_TEST_URL, unique } from '../helpers/tps.js';

// VelocityCounter.peek (a satisfied step-up retry's read of TPS's window): the count as hit would
// see it, without adding to it. In the process and in a real Redis under a prefix of the test's own.

// The middle of a 60 s bucket, so that the previous bucket's share is half of it.
const MID = 1_800_000_030_000;

for (const kind of ['memory', 'redis'] as const) {
  test(`[${kind}] peek reads the sliding count without counting`, async (t) => {
    const { counters } = stateOf(kind, t);
    const key = `k_${unique()}`;
    t.is(await counters.peek(key, 60, MID), 0);
    for (let i = 0; i < 4; i++) await counters.hit(key, 60, MID - 60_000);
    // The previous bucket's 4, half still in the window.
    t.is(await counters.peek(key, 60, MID), 2);
    t.is(await counters.hit(key, 60, MID), 3);
    t.is(await counters.peek(key, 60, MID), 3);
    t.is(await counters.peek(key, 60, MID), 3);
    t.is(await counters.hit(key, 60, MID), 4);
  });
}

test('[redis] a bucket that holds no count is an outage for peek, as for hit, not a count of none', async (t) => {
  const prefix = `tps-test:${unique()}:`;
  const { counters } = stateOf('redis', t, prefix);
  const redis = new Redis(REDIS_TEST_URL);
  t.teardown(() => redis.disconnect());
  await redis.set(`${prefix}v:broken:${Math.floor(MID / 60_000)}`, 'not a number');
  const err = await t.throwsAsync(counters.peek('broken', 60, MID), { instanceOf: ApiError });
  t.is(err!.code, 'state_unavailable');
  await t.throwsAsync(counters.hit('broken', 60, MID), { instanceOf: ApiError });
});
