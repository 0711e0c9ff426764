import test from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { awayFromVelocityEdge, post, startTps, type RunningTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// TPS's own window (throttle.serviceWindow) on the satisfied step-up retry: the retry is not counted
// (its challenged evaluation was), yet it is held back once the window is over `max`, by the count
// read without adding to it. Else an actor could collect challenges for their whole lifetime and
// redeem them all at once. CONTRACT: deny > throttle > step_up_required, and a throttle wins over
// the lifted step-up too. With the counts in the process (SQLite) and in Redis.

async function evaluate(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

const largePayment = (actorId: string): EvaluateRequest => ({ ...samples.payment(0, actorId), requestData: { amount: 15000, currency: 'EUR' } });
const passed = (body: EvaluateRequest): EvaluateRequest => ({ ...body, challengeResult: { type: 'proof_token', passed: true } });
const serviceCountOf = async (tps: RunningTps, telemetryId: string) =>
  ((await tps.tps.events.get(tps.environment, telemetryId))!.explanation.facts as { velocity?: { serviceCount?: number } }).velocity?.serviceCount;

for (const state of ['memory', 'redis'] as const) {
  const label = state === 'redis' ? '[sqlite, counts in Redis]' : '[sqlite, counts in the process]';

  test(`${label} a satisfied retry is throttled once the actor's window is over max, and is not counted`, async (t) => {
    const tps = await startTps({ redis: state === 'redis' });
    t.teardown(() => tps.close());
    const { max } = await awayFromVelocityEdge();
    const base = largePayment('fin_collector');
    const first = await evaluate(tps, base);
    t.is(first.decision, 'step_up_required');

    // Small payments of the same actor fill the window past max (the challenged one counted too).
    let last: EvaluateResponse | undefined;
    for (let i = 0; i < max; i++) last = await evaluate(tps, samples.payment(0, 'fin_collector'));
    t.is(last!.decision, 'throttle');
    t.true(last!.reasons.includes('service_velocity_limit_exceeded'));

    const retry = await evaluate(tps, passed(base));
    t.is(retry.decision, 'throttle', JSON.stringify(retry.reasons));
    t.true(retry.reasons.includes('service_velocity_limit_exceeded'));
    t.is(retry.retryAfterSeconds, 60);
    t.is(retry.score, first.score, 'still decided on the challenged score');
    // Read, not counted: the retry saw the count the last counted payment left.
    t.is(await serviceCountOf(tps, retry.telemetryId), await serviceCountOf(tps, last!.telemetryId));
  });

  test(`${label} a satisfied retry under max is allowed and still not counted`, async (t) => {
    const tps = await startTps({ redis: state === 'redis' });
    t.teardown(() => tps.close());
    const { max } = await awayFromVelocityEdge();
    const base = largePayment('fin_calm');
    t.is((await evaluate(tps, base)).decision, 'step_up_required');
    const retry = await evaluate(tps, passed(base));
    t.is(retry.decision, 'allow');
    t.is(await serviceCountOf(tps, retry.telemetryId), 1);
    // The challenged payment took one of max: the rest are the actor's, the retry took none.
    const results: string[] = [];
    for (let i = 0; i < max; i++) results.push((await evaluate(tps, samples.payment(0, 'fin_calm'))).decision);
    t.deepEqual(results, [...Array(max - 1).fill('allow'), 'throttle']);
  });
}
