import test, { type ExecutionContext } from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { samples } from '../core/evaluate-suite.js';
import { assertStateUnavailable, BOUND_MS, evaluateWithin, startBehindProxy, threadMode, until, within } from '../helpers/redisProxy.js';
import { get, post, unique, type RunningTps } from '../helpers/tps.js';

// A Redis that is reachable but silent (paused, partitioned, behind a proxy that holds the socket)
// never breaks the connection. Every command is bounded (TPS_REDIS_TIMEOUT_MS, 1 s by default), so
// a request that needs Redis answers 503 state_unavailable, /readyz reports it, and the service
// stops. The real Redis sits behind a proxy that goes silent.

async function allowed(t: ExecutionContext, tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await evaluateWithin(tps, body);
  t.is(res.status, 200, JSON.stringify(res.body));
  return res.body as EvaluateResponse;
}

for (const thread of [false, true]) {
  test(`[${threadMode(thread)}] a Redis that stops answering: evaluate answers 503 state_unavailable, /readyz reports it (still 200), and the service stops with a request in flight`, async (t) => {
    const { tps, proxy, stop } = await startBehindProxy(t, { thread });
    // Payments keep a velocity count: every evaluate of it needs Redis.
    const payment = samples.payment(0, `fin_${unique()}`);
    t.is((await allowed(t, tps, payment)).decision, 'allow');

    proxy.silence();
    assertStateUnavailable(t, await evaluateWithin(tps, payment));

    const ready = await within(get(`${tps.url}/readyz`), BOUND_MS, '/readyz');
    t.is(ready.status, 200, JSON.stringify(ready.body));
    t.is(ready.body.status, 'ready');
    t.deepEqual(ready.body.state, { status: 'unreachable', backend: 'redis' });

    // One more while the service stops: answered, and the stop completes.
    const waiting = proxy.waiting();
    const inFlight = post(`${tps.url}/api/evaluate`, payment, tps.secretKey);
    await until(() => proxy.waiting() > waiting, BOUND_MS, 'the request reaching Redis');
    await within(stop(), BOUND_MS, 'tps.close()');
    assertStateUnavailable(t, await inFlight);
  });

  test(`[${threadMode(thread)}] a retry that used its challenge before Redis went silent answers 503, and the challenge is back once Redis answers again`, async (t) => {
    const { tps, proxy } = await startBehindProxy(t, { thread });
    const base: EvaluateRequest = { ...samples.payment(0, `fin_${unique()}`), requestData: { amount: 15000, currency: 'EUR' } };
    const first = await allowed(t, tps, base);
    t.is(first.decision, 'step_up_required');
    t.is(first.challenge?.type, 'proof_token');

    // Silent from the failed retry's velocity count on, which comes after it used the challenge up:
    // its put-back waits behind the count, on the same connection.
    proxy.silenceAt('$4\r\nincr\r\n');
    assertStateUnavailable(t, await evaluateWithin(tps, { ...base, challengeResult: { type: 'proof_token', passed: false } }));
    proxy.resume();

    const retried = await allowed(t, tps, { ...base, challengeResult: { type: 'proof_token', passed: true } });
    t.is(retried.decision, 'allow');
    t.deepEqual(retried.reasons, [...first.reasons, 'challenge_satisfied']);
  });
}
