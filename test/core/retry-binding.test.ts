import test from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { reply, startFakeModel } from '../helpers/fakeModel.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';

// The step-up retry over real HTTP: it is decided on what was challenged, bound to what the
// transaction does, and the challenge asked is the one that the strictest rule needs.

async function evaluate(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

const passed = (type: 'passkey' | 'proof_token') => ({ challengeResult: { type, passed: true } });

test('a satisfied retry is decided on the challenged score: the advisory delta that kept it under the deny threshold still counts', async (t) => {
  const model = await startFakeModel();
  const tps = await startTps({ env: { TPS_AI_URL: model.url, TPS_AI_MODEL: 'fake-risk-1' } });
  t.teardown(async () => {
    await tps.close();
    await model.close();
  });
  // 100 from the signals alone: over finance-export's deny threshold (90) until the model's -15.
  const risky: EvaluateRequest = {
    operationKey: 'invoice.export',
    actor: { id: 'fin_1', authenticated: false, roles: ['finance'] },
    resource: { type: 'invoice', id: 'batch_ai' },
    requestData: { requestedCount: 200 },
    session: { sessionId: 's_ai', continuityStrength: 0.1, isNewDevice: true, geoChanged: true, networkChanged: true },
    metadata: { abnormalSequence: true },
  };
  model.script(reply.answer(-15));
  const first = await evaluate(tps, risky);
  t.is(first.aiAssessment?.status, 'applied');
  t.is(first.score, 85);
  t.is(first.decision, 'step_up_required');
  t.true(first.reasons.includes('score_step_up_threshold'));

  const retry = await evaluate(tps, { ...risky, ...passed('passkey') });
  t.is(retry.decision, 'allow', JSON.stringify(retry.reasons));
  t.is(retry.score, 85);
  t.deepEqual(retry.reasons, [...first.reasons, 'challenge_satisfied']);
  t.is(model.requests.length, 1, 'the model is not asked again');

  const event = await tps.tps.events.get(tps.environment, retry.telemetryId);
  t.false(event!.explanation.rules.find((r) => r.name === 'score-deny')!.fired);
});

test('a retry that claims another canonical count, resourceCount or changedFields is not the challenged transaction', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const bulkRead: EvaluateRequest = {
    operationKey: 'customer.read_pii',
    actor: { id: 'agent_1', authenticated: true, roles: ['support'] },
    resource: { type: 'customer', id: 'cus_bulk' },
    session: { sessionId: 's_pii', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
    metadata: { requestedCount: 101 },
  };
  const first = await evaluate(tps, bulkRead);
  t.is(first.decision, 'step_up_required');
  t.true(first.reasons.includes('bulk_pii_read'));

  const inflated = await evaluate(tps, { ...bulkRead, metadata: { requestedCount: 5_000_000 }, ...passed('passkey') });
  t.is(inflated.decision, 'step_up_required');
  t.true(inflated.reasons.includes('challenge_invalid'));

  // What may differ on a genuine retry: a proof token, the caller's velocity count, the hour, notes, the booleans.
  const genuine = await evaluate(tps, {
    ...bulkRead,
    metadata: { requestedCount: 101, proofToken: 'tok', velocityWindowCount: 3, localHour: 11, notes: 'retry', objectAccessRare: true },
    ...passed('passkey'),
  });
  t.is(genuine.decision, 'allow_redacted');
  t.true(genuine.reasons.includes('challenge_satisfied'));

  // bank_account.update without a human signal steps up; each variant is its own transaction.
  const change = (id: string, metadata: EvaluateRequest['metadata']): EvaluateRequest => ({
    operationKey: 'bank_account.update',
    actor: { id: 'user_1', authenticated: true },
    resource: { type: 'account', id },
    session: { sessionId: 's_bank' },
    metadata,
  });
  const variants: [string, EvaluateRequest['metadata'], EvaluateRequest['metadata']][] = [
    ['acc_fields', { changedFields: ['iban'] }, { changedFields: ['iban', 'accountHolder'] }],
    ['acc_count', { resourceCount: 1 }, { resourceCount: 40 }],
  ];
  for (const [id, before, after] of variants) {
    t.is((await evaluate(tps, change(id, before))).decision, 'step_up_required');
    const other = await evaluate(tps, { ...change(id, after), ...passed('passkey') });
    t.is(other.decision, 'step_up_required', id);
    t.true(other.reasons.includes('challenge_invalid'), id);
    t.is((await evaluate(tps, { ...change(id, before), ...passed('passkey') })).decision, 'allow', id);
  }
});

test("a large payment from a risky session asks for the payments rule's proof token; a passkey does not clear it", async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  // 67.5: over the step-up threshold (60), and 15,000 is over the proof-token amount (10,000).
  const payment: EvaluateRequest = {
    operationKey: 'payment_transaction.create',
    actor: { id: 'payer_1', authenticated: false, role: 'finance' },
    resource: { type: 'payment_method', id: 'pm_big' },
    requestData: { amount: 15000, currency: 'EUR' },
    session: { sessionId: 's_pay', continuityStrength: 0.5, recentHumanSignalAgeSeconds: 5, isNewDevice: true, geoChanged: true, networkChanged: true },
  };
  const first = await evaluate(tps, payment);
  t.is(first.decision, 'step_up_required');
  t.true(first.reasons.includes('score_step_up_threshold'));
  t.true(first.reasons.includes('large_payment_amount'));
  t.is(first.challenge?.type, 'proof_token');

  const withPasskey = await evaluate(tps, { ...payment, ...passed('passkey') });
  t.is(withPasskey.decision, 'step_up_required');
  t.true(withPasskey.reasons.includes('challenge_invalid'));
  t.is(withPasskey.challenge?.type, 'proof_token');

  const withProof = await evaluate(tps, { ...payment, metadata: { proofToken: 'tok-1' }, ...passed('proof_token') });
  t.is(withProof.decision, 'allow');
  t.is(withProof.score, 67.5);
  t.true(withProof.reasons.includes('challenge_satisfied'));
});
