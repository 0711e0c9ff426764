import test from 'ava';
import type { CompiledRule } from '../../src/policy/compile.js';
import { decide, mergeRedactions, PRECEDENCE } from '../../src/decide/decide.js';
import { buildFacts } from '../../src/facts/facts.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { runPolicy } from '../../src/policy/run.js';
import { REPO_ROOT } from '../helpers/tps.js';

const catalog = loadCatalog(REPO_ROOT);

async function fired(opKey: string, extra: object, risk = { score: 10, band: 'low' }, velocity = {}) {
  const op = catalog.operations.get(opKey)!;
  const policy = catalog.policies.get(op.policyId)!;
  const facts = buildFacts({ operationKey: opKey, actor: { id: 'u' }, resource: { type: 't', id: 'r' }, ...extra }, op, 0);
  const run = await runPolicy(policy, { ...facts, risk, velocity });
  return run.fired.map((r) => r.name);
}

test('policy engine: required roles are checked against role and roles', async (t) => {
  t.deepEqual(await fired('customer.read_pii', { actor: { id: 'u', roles: ['sales'] } }), ['require-roles', 'redact-for-non-admin']);
  t.deepEqual(await fired('customer.read_pii', { actor: { id: 'u', role: 'support' } }), ['redact-for-non-admin']);
  t.deepEqual(await fired('customer.read_pii', { actor: { id: 'u', roles: ['admin'] } }), []);
});

test('policy engine: the human signal must be present and younger than the maximum age', async (t) => {
  t.deepEqual(await fired('bank_account.update', {}), ['require-recent-human-signal']);
  t.deepEqual(await fired('bank_account.update', { session: { recentHumanSignalAgeSeconds: 121 } }), ['require-recent-human-signal']);
  t.deepEqual(await fired('bank_account.update', { session: { recentHumanSignalAgeSeconds: 120 } }), []);
});

test('policy engine: throttle from the caller count and from the service window; score thresholds', async (t) => {
  const ok = { actor: { id: 'u', role: 'finance' } };
  t.deepEqual(await fired('payment_transaction.create', { ...ok, metadata: { velocityWindowCount: 21 } }), ['caller-velocity-limit']);
  t.deepEqual(await fired('payment_transaction.create', { ...ok, metadata: { velocityWindowCount: 20 } }), []);
  t.deepEqual(await fired('payment_transaction.create', ok, undefined, { serviceCount: 31 }), ['service-velocity-limit']);
  t.deepEqual(await fired('payment_transaction.create', ok, { score: 86, band: 'high' }), ['score-deny', 'score-step-up']);
  t.deepEqual(await fired('payment_transaction.create', { ...ok, requestData: { amount: 10_000 } }), ['step-up-large-payment']);
});

const rule = (decision: CompiledRule['decision'], reason: string, extra: Partial<CompiledRule> = {}): CompiledRule => ({ name: reason, decision, reason, builtIn: false, conditions: { all: [] }, ...extra });
const base = { score: 20, band: 'low' as const, riskReasons: ['new_device'], stepUpChallenge: 'passkey' as const, challenge: { kind: 'none' as const } };

test('decide: CONTRACT precedence deny > throttle > step_up_required > allow_redacted > allow', (t) => {
  t.deepEqual(PRECEDENCE, ['deny', 'throttle', 'step_up_required', 'allow_redacted', 'allow']);
  const all = [rule('allow_redacted', 'r', { redaction: { fields: ['a'], strategy: 'mask' } }), rule('step_up_required', 's'), rule('throttle', 't', { retryAfterSeconds: 5 }), rule('deny', 'd')];
  for (let i = 0; i < all.length; i++) {
    const out = decide({ ...base, fired: all.slice(0, i + 1) });
    t.is(out.decision, all[i]!.decision);
    t.deepEqual(out.reasons, ['new_device', all[i]!.reason], 'only the winning rules add reasons');
  }
  t.is(decide({ ...base, fired: [] }).decision, 'allow');
});

test('decide: a satisfied challenge lifts step-up only, keeping the challenged score and reasons', (t) => {
  const challenge = { kind: 'satisfied' as const, score: 44, band: 'medium' as const, reasons: ['x', 'y'] };
  const out = decide({ ...base, fired: [rule('step_up_required', 's'), rule('allow_redacted', 'r', { redaction: { fields: ['a'], strategy: 'mask' } })], challenge });
  t.is(out.decision, 'allow_redacted');
  t.is(out.score, 44);
  t.deepEqual(out.reasons, ['x', 'y', 'challenge_satisfied', 'r']);
  t.is(decide({ ...base, fired: [rule('deny', 'd')], challenge }).decision, 'deny', 'a hard deny still wins');
});

test('decide: failed and invalid challenges', (t) => {
  t.is(decide({ ...base, fired: [], challenge: { kind: 'failed' } }).decision, 'deny');
  const invalid = decide({ ...base, fired: [], challenge: { kind: 'invalid' } });
  t.is(invalid.decision, 'step_up_required');
  t.is(invalid.challengeType, 'passkey');
  t.true(invalid.reasons.includes('challenge_invalid'));
});

test('decide: redactions merge, and drop is stricter than mask; throttle takes the longest wait', (t) => {
  t.deepEqual(mergeRedactions([{ fields: ['a', 'b'], strategy: 'mask' }, { fields: ['b', 'c'], strategy: 'drop' }]), { fields: ['a', 'b', 'c'], strategy: 'drop' });
  t.is(decide({ ...base, fired: [rule('throttle', 't1', { retryAfterSeconds: 5 }), rule('throttle', 't2', { retryAfterSeconds: 30 })] }).retryAfterSeconds, 30);
  t.deepEqual(decide({ ...base, riskReasons: [], fired: [] }).reasons, ['low_risk_operation']);
  t.deepEqual(decide({ ...base, band: 'high', riskReasons: [], fired: [] }).reasons, ['high_risk_score']);
});
