import test from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { post, startTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// SPEC §3 rule 2: the retry carries challengeResult (type, passed true). Without the type, a passed
// result would satisfy a challenge of any type: a proof token asked, "passed" with nothing named.

const largePayment = (actorId: string): EvaluateRequest => ({ ...samples.payment(0, actorId), requestData: { amount: 15000, currency: 'EUR' } });

test('a passed challengeResult without its type is a 400 naming challengeResult.type, and leaves the challenge live', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const evaluate = (body: unknown) => post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  const base = largePayment('fin_typeless');
  const first = await evaluate(base);
  t.is(first.body.decision, 'step_up_required');
  t.is(first.body.challenge.type, 'proof_token');

  for (const challengeResult of [{ passed: true }, { passed: true, challengeId: first.body.challenge.id }]) {
    const res = await evaluate({ ...base, challengeResult });
    t.is(res.status, 400, JSON.stringify(res.body));
    t.is(res.body.error.code, 'invalid_request');
    t.deepEqual(res.body.error.details, [{ path: 'challengeResult.type', message: 'challengeResult.type is required when challengeResult.passed is true' }]);
  }

  // Refused before it was evaluated: the challenge is still there for the retry that names its type.
  const retry = await evaluate({ ...base, challengeResult: { type: 'proof_token', passed: true } });
  t.is(retry.status, 200);
  t.is(retry.body.decision, 'allow');
  t.deepEqual(retry.body.reasons, [...first.body.reasons, 'challenge_satisfied']);
  t.is(await tps.tps.events.count(), 2, 'the refused retries stored nothing');
});

test('a failed challengeResult without its type is denied with challenge_failed, and uses the challenge up', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const evaluate = (body: unknown) => post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  const base = largePayment('fin_failed');
  t.is((await evaluate(base)).body.decision, 'step_up_required');

  const failed = await evaluate({ ...base, challengeResult: { passed: false } });
  t.is(failed.status, 200, JSON.stringify(failed.body));
  t.is(failed.body.decision, 'deny');
  t.true(failed.body.reasons.includes('challenge_failed'));

  const after = await evaluate({ ...base, challengeResult: { type: 'proof_token', passed: true } });
  t.is(after.body.decision, 'step_up_required');
  t.true(after.body.reasons.includes('challenge_invalid'));
});
