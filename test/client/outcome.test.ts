// The decision → action mapping, checked for every value including ones this version does not know.
import test from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import type { Evaluation } from '../../src/client/index.js';
import { toOutcome } from '../../src/middleware/outcome.js';

const tx: EvaluateRequest = { operationKey: 'customer.create', actor: { id: 'u1' }, resource: { type: 'customer', id: 'c1' } };
const base = (over: Partial<Evaluation>): Evaluation => ({
  decision: 'allow', score: 10, riskBand: 'low', reasons: [], telemetryId: 'tel_1', operationKey: 'customer.create',
  operationDisplayName: 'Create customer', actionType: 'create', resourceType: 'customer', sensitivity: 'medium', policyId: 'p', warnings: [], ...over,
});

test('allow continues and redact is the identity', (t) => {
  const outcome = toOutcome(base({}), tx);
  t.is(outcome.action, 'continue');
  if (outcome.action === 'continue') t.deepEqual(outcome.redact({ a: 1 }), { a: 1 });
});

test('allow_redacted continues with the redaction; without one it fails closed', (t) => {
  const ok = toOutcome(base({ decision: 'allow_redacted', redaction: { fields: ['a'], strategy: 'drop' } }), tx);
  t.is(ok.action, 'continue');
  if (ok.action === 'continue') t.deepEqual(ok.redact({ a: 1, b: 2 }), { b: 2 });
  const broken = toOutcome(base({ decision: 'allow_redacted' }), tx);
  t.is(broken.action, 'block');
  if (broken.action !== 'continue') t.is(broken.status, 403);
});

test('deny is 403 with the telemetryId and no reasons', (t) => {
  const outcome = toOutcome(base({ decision: 'deny', reasons: ['policy_role_required'] }), tx);
  t.like(outcome, { action: 'block', status: 403, body: { decision: 'deny', telemetryId: 'tel_1', error: { code: 'transaction_denied' } } });
  t.false(JSON.stringify(outcome.action !== 'continue' && outcome.body).includes('policy_role_required'));
});

test('throttle is 429 with retry-after, defaulting when the answer has none', (t) => {
  t.like(toOutcome(base({ decision: 'throttle', retryAfterSeconds: 2.2 }), tx), { status: 429, headers: { 'retry-after': '3' }, body: { retryAfterSeconds: 3 } });
  t.like(toOutcome(base({ decision: 'throttle' }), tx), { status: 429, headers: { 'retry-after': '60' } });
});

test('step_up_required is 428 naming the challenge; without a challenge it fails closed', (t) => {
  const challenge = { type: 'passkey' as const, id: 'ch_1' };
  t.like(toOutcome(base({ decision: 'step_up_required', challenge }), tx), {
    action: 'challenge', status: 428, headers: { 'x-svc-challenge-id': 'ch_1', 'x-svc-challenge-type': 'passkey' }, body: { challenge },
  });
  t.like(toOutcome(base({ decision: 'step_up_required', challenge }), tx, 401), { status: 401 });
  t.like(toOutcome(base({ decision: 'step_up_required' }), tx), { action: 'block', status: 403 });
});

test('an unknown decision blocks', (t) => {
  for (const decision of ['allow_later', '', 'ALLOW', undefined]) {
    t.like(toOutcome(base({ decision: decision as never }), tx), { action: 'block', status: 403, body: { error: { code: 'transaction_blocked' } } });
  }
});
