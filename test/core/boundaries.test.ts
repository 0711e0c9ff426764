import anyTest, { type TestFn } from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';

// The sample policies at their documented limits (README, "The sample configuration"), over HTTP:
// "N+" includes N; a human signal 120 s old is still recent enough.
const test = anyTest as TestFn<{ tps: RunningTps }>;

test.before(async (t) => {
  t.context.tps = await startTps();
});
test.after.always(async (t) => t.context.tps?.close());

const session = { sessionId: 's_edge', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 };

async function decisionOf(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

test('invoice.export: 50,000+ records are denied, 1,000+ redacted', async (t) => {
  const exportOf = (requestedCount: number): EvaluateRequest => ({
    operationKey: 'invoice.export',
    actor: { id: 'fin_edge', authenticated: true, roles: ['finance'] },
    resource: { type: 'invoice', id: `batch_${requestedCount}` },
    requestData: { requestedCount },
    session,
  });
  const at = await decisionOf(t.context.tps, exportOf(50_000));
  t.is(at.decision, 'deny');
  t.true(at.reasons.includes('export_volume_limit'));
  t.is((await decisionOf(t.context.tps, exportOf(49_999))).decision, 'allow_redacted');
  t.is((await decisionOf(t.context.tps, exportOf(1000))).decision, 'allow_redacted');
  t.is((await decisionOf(t.context.tps, exportOf(999))).decision, 'allow');
});

test('customer.read_pii: 100+ records need a step-up', async (t) => {
  const readOf = (requestedCount: number): EvaluateRequest => ({
    operationKey: 'customer.read_pii',
    actor: { id: 'agent_edge', authenticated: true, roles: ['support'] },
    resource: { type: 'customer', id: `cus_${requestedCount}` },
    requestData: { requestedCount },
    session,
  });
  const at = await decisionOf(t.context.tps, readOf(100));
  t.is(at.decision, 'step_up_required');
  t.true(at.reasons.includes('bulk_pii_read'));
  t.is((await decisionOf(t.context.tps, readOf(99))).decision, 'allow_redacted');
});

test('payment_transaction.create: 10,000+ amounts need a proof token', async (t) => {
  const paymentOf = (amount: number): EvaluateRequest => ({
    operationKey: 'payment_transaction.create',
    actor: { id: 'payer_edge', authenticated: true, role: 'finance' },
    resource: { type: 'payment_method', id: `pm_${amount}` },
    requestData: { amount, currency: 'EUR' },
    session,
  });
  const at = await decisionOf(t.context.tps, paymentOf(10_000));
  t.is(at.decision, 'step_up_required');
  t.is(at.challenge?.type, 'proof_token');
  t.is((await decisionOf(t.context.tps, paymentOf(9_999.99))).decision, 'allow');
});

test('bank_account.update: a human signal at most 120 s old needs no step-up', async (t) => {
  const changeAt = (age: number): EvaluateRequest => ({
    operationKey: 'bank_account.update',
    actor: { id: 'user_edge', authenticated: true },
    resource: { type: 'account', id: `acc_${age}` },
    requestData: { fields: ['iban'] },
    session: { ...session, recentHumanSignalAgeSeconds: age },
  });
  t.is((await decisionOf(t.context.tps, changeAt(120))).decision, 'allow');
  const after = await decisionOf(t.context.tps, changeAt(121));
  t.is(after.decision, 'step_up_required');
  t.true(after.reasons.includes('policy_recent_human_signal_required'));
});
