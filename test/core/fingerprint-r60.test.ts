import test from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';

// A step-up retry written another way than the first call, over real HTTP: what the policy cannot
// tell apart (no requestData and `{}`, changedFields in another order or with a repeat) is the same
// transaction, so the challenge is found and satisfied; another set of fields is still refused, and
// so is requestData.fields in another order, which rules can see.

async function evaluate(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

const passkey = { challengeResult: { type: 'passkey' as const, passed: true } };

// bank_account.update without a human signal steps up (rules/bank-account-change.yaml).
const change = (id: string, extra: Partial<EvaluateRequest> = {}): EvaluateRequest => ({
  operationKey: 'bank_account.update',
  actor: { id: 'user_fp', authenticated: true },
  resource: { type: 'account', id },
  session: { sessionId: 's-fp' },
  ...extra,
});

test('a retry that leaves out an empty requestData, or sends changedFields in another order or with a repeat, satisfies its challenge', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const sequences: [string, Partial<EvaluateRequest>, Partial<EvaluateRequest>][] = [
    ['fp_empty_data', { requestData: {} }, {}],
    ['fp_absent_data', {}, { requestData: {} }],
    ['fp_order', { metadata: { changedFields: ['iban', 'bic'] } }, { metadata: { changedFields: ['bic', 'iban'] } }],
    ['fp_repeat', { metadata: { changedFields: ['iban', 'bic', 'iban'] } }, { metadata: { changedFields: ['bic', 'iban'] } }],
  ];
  for (const [id, first, retry] of sequences) {
    const asked = await evaluate(tps, change(id, first));
    t.is(asked.decision, 'step_up_required', id);
    const answered = await evaluate(tps, { ...change(id, retry), ...passkey });
    t.is(answered.decision, 'allow', `${id}: ${answered.reasons.join(', ')}`);
    t.true(answered.reasons.includes('challenge_satisfied'), id);
  }
});

test('a retry naming another set of changed fields is still another transaction', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  t.is((await evaluate(tps, change('fp_set', { metadata: { changedFields: ['iban', 'bic'] } }))).decision, 'step_up_required');
  const other = await evaluate(tps, { ...change('fp_set', { metadata: { changedFields: ['bic', 'iban', 'accountHolder'] } }), ...passkey });
  t.is(other.decision, 'step_up_required');
  t.true(other.reasons.includes('challenge_invalid'));
});

// Unlike changedFields, requestData.fields is the caller's own list: a rule may read its order or
// its length (requestData.fields.0, requestData.fields.length), so it is hashed as sent.
test('a retry sending requestData.fields in another order, or with a repeat, is another transaction', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  for (const [id, retried] of [
    ['fp_fields_order', ['phone', 'email']],
    ['fp_fields_repeat', ['email', 'phone', 'phone']],
  ] as const) {
    t.is((await evaluate(tps, change(id, { requestData: { fields: ['email', 'phone'] } }))).decision, 'step_up_required', id);
    const other = await evaluate(tps, { ...change(id, { requestData: { fields: [...retried] } }), ...passkey });
    t.is(other.decision, 'step_up_required', id);
    t.true(other.reasons.includes('challenge_invalid'), id);
  }
});
