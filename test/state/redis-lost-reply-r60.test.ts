import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { samples } from '../core/evaluate-suite.js';
import { assertStateUnavailable, evaluateWithin, startBehindProxy, threadMode } from '../helpers/redisProxy.js';
import { REDIS_TEST_URL, startTps, unique, type RunningTps } from '../helpers/tps.js';

// A command whose outcome TPS never learns: its reply lost with its connection, or late past the
// command timeout. Sent again on the next connection (ioredis's default) it could run twice: a
// retry's use of its challenge found its own challenge gone, a velocity count counted two. It is
// not sent again, and the request answers 503 state_unavailable. A use of a challenge is undone
// first, if Redis ran it: the retry the 503 asks for finds the challenge, and is allowed once.

function directRedis(t: ExecutionContext): Redis {
  const redis = new Redis(REDIS_TEST_URL);
  t.teardown(() => redis.disconnect());
  return redis;
}

async function answered(t: ExecutionContext, tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await evaluateWithin(tps, body);
  t.is(res.status, 200, JSON.stringify(res.body));
  return res.body as EvaluateResponse;
}

/** A payment that steps up (proof_token), and its retry reporting the challenge passed. */
function stepUp(): { base: EvaluateRequest; satisfied: EvaluateRequest } {
  const base: EvaluateRequest = { ...samples.payment(0, `fin_${unique()}`), requestData: { amount: 15000, currency: 'EUR' } };
  return { base, satisfied: { ...base, challengeResult: { type: 'proof_token', passed: true } } };
}

/** The retry the 503 asked for is allowed on the challenge, once: sent once more, it finds it used. */
async function allowedOnce(t: ExecutionContext, tps: RunningTps, first: EvaluateResponse, satisfied: EvaluateRequest): Promise<void> {
  const retried = await answered(t, tps, satisfied);
  t.is(retried.decision, 'allow', JSON.stringify(retried.reasons));
  t.deepEqual(retried.reasons, [...first.reasons, 'challenge_satisfied']);
  const again = await answered(t, tps, satisfied);
  t.is(again.decision, 'step_up_required');
  t.true(again.reasons.includes('challenge_invalid'));
  t.not(again.challenge?.id, first.challenge?.id);
}

// CONSUME is the script that decodes the stored challenge (src/state/redis.ts).
const CONSUME_MARKER = 'cjson.decode';

for (const thread of [false, true]) {
  test(`[${threadMode(thread)}] a retry whose use of its challenge ran but whose reply was lost answers 503; the challenge is back, and the retry sent again is allowed once`, async (t) => {
    const { tps, proxy, redisPrefix } = await startBehindProxy(t, { thread });
    const redis = directRedis(t);
    const { base, satisfied } = stepUp();
    const first = await answered(t, tps, base);
    t.is(first.decision, 'step_up_required');

    const lost = proxy.loseReplyTo(CONSUME_MARKER);
    assertStateUnavailable(t, await evaluateWithin(tps, satisfied));
    await lost;
    // Redis ran the use, and the put-back ran after it, before the 503 was answered.
    t.is(await redis.exists(`${redisPrefix}ch:${first.challenge!.id}`), 1, 'the challenge is back');
    t.deepEqual(await redis.keys(`${redisPrefix}chused:*`), [], 'its used key went with the put-back');

    await allowedOnce(t, tps, first, satisfied);
  });

  test(`[${threadMode(thread)}] a retry whose use of its challenge is late (Redis silent past the timeout) answers 503; once Redis answers, the challenge is back and the retry is allowed once`, async (t) => {
    const { tps, proxy } = await startBehindProxy(t, { thread });
    const { base, satisfied } = stepUp();
    const first = await answered(t, tps, base);
    t.is(first.decision, 'step_up_required');

    // Silent from the use on: it times out, and so does the put-back queued behind it.
    proxy.silenceAt(CONSUME_MARKER);
    assertStateUnavailable(t, await evaluateWithin(tps, satisfied));
    // Redis answers again: the late use runs, then the put-back, in that order on that connection.
    proxy.resume();
    await allowedOnce(t, tps, first, satisfied);
  });

  test(`[${threadMode(thread)}] a velocity count whose reply was lost answers 503 and is counted once`, async (t) => {
    const { tps, proxy, redisPrefix } = await startBehindProxy(t, { thread });
    const redis = directRedis(t);
    const actor = `fin_${unique()}`;
    const lost = proxy.loseReplyTo('$4\r\nincr\r\n');
    assertStateUnavailable(t, await evaluateWithin(tps, samples.payment(0, actor)));
    await lost;
    // Every bucket of the actor's count (the request may straddle a bucket's edge).
    const keys = await redis.keys(`${redisPrefix}v:*${actor}*`);
    const counted = (await Promise.all(keys.map((k) => redis.get(k)))).reduce((sum, v) => sum + Number(v), 0);
    t.is(counted, 1);
  });
}

test('a late put-back never returns a challenge that another retry used meanwhile: only the use that moved it can put it back', async (t) => {
  // Two instances share the challenges: `late` reaches Redis through the proxy, `other` directly.
  const { tps: late, proxy, redisPrefix } = await startBehindProxy(t, { thread: false });
  const other = await startTps({ redisPrefix, env: { REDIS_URL: REDIS_TEST_URL, TPS_EVALUATE_THREAD: 'false' } });
  t.teardown(() => other.close());
  const { base, satisfied } = stepUp();
  const first = await answered(t, late, base);
  t.is(first.decision, 'step_up_required');

  // The late instance's use, and its put-back behind it, wait in a silent connection; meanwhile
  // the other instance's retry uses the challenge and is allowed.
  proxy.silenceAt(CONSUME_MARKER);
  assertStateUnavailable(t, await evaluateWithin(late, satisfied));
  const allowed = await answered(t, other, satisfied);
  t.is(allowed.decision, 'allow');
  t.true(allowed.reasons.includes('challenge_satisfied'));

  // Redis answers again: the late use finds the challenge gone, and its put-back finds the other
  // retry's use, not its own, so it puts nothing back. A retry on that connection, after both, is refused.
  proxy.resume();
  const again = await answered(t, late, satisfied);
  t.is(again.decision, 'step_up_required');
  t.true(again.reasons.includes('challenge_invalid'));
  const redis = directRedis(t);
  t.is(await redis.exists(`${redisPrefix}ch:${first.challenge!.id}`), 0, 'the used challenge stays used');
});
