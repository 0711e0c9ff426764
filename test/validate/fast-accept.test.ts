import test from 'ava';
import fc from 'fast-check';
import { validateEvaluateRequest, evaluateRequestSchema } from '../../src/validate/evaluateRequest.js';
import { compileFastAccept } from '../../src/validate/fastAccept.js';
import { check, yup } from '../../src/validate/kit.js';

// The compiled fast path may only ever accept what yup accepts, and every answer of the compiled
// check must be exactly yup's: same verdict, same value, same error paths and messages in order.

const yupOnly = (value: unknown) => check(evaluateRequestSchema as unknown as yup.Schema<unknown>, value);
const fast = compileFastAccept(evaluateRequestSchema as unknown as yup.Schema);

const VALID: Record<string, unknown>[] = [
  { operationKey: 'customer.create', actor: { id: 'u1', authenticated: true }, resource: { type: 'customer', id: 'c1' }, session: { continuityStrength: 0.9, recentHumanSignalAgeSeconds: 5 } },
  { operationKey: 'bank_account.update', actor: { id: 'u1', role: 'admin', roles: ['finance'], trusted: false, sessionAgeMinutes: 3 }, resource: { type: 'account', id: 'a1', ownerId: 'u1', classification: 'PII' } },
  {
    operationKey: 'invoice.export',
    actor: { id: 'u2', roles: ['finance', 'admin'] },
    resource: { type: 'invoice', id: 'i1' },
    requestData: { requestedCount: 5000, fields: ['customer.email'], amount: 12.5, currency: 'EUR' },
    metadata: { requestedCount: 5000, velocityWindowCount: 3, changedFields: ['iban'], resourceCount: 2, abnormalSequence: false, objectAccessRare: true, suspiciousTimeWindow: false, localHour: 23, proofToken: 'pt', notes: 'n' },
    session: { sessionId: 's', tabId: 't', isNewDevice: true, continuityStrength: 0, recentHumanSignalAt: '2026-01-02T03:04:05Z', geoChanged: false, networkChanged: true, ipAddress: '10.0.0.1', userAgent: 'ua' },
    challengeResult: { type: 'passkey', passed: true, challengeId: 'ch_1' },
    rawSignals: { botScore: 0.2, 'vendor.flag': true },
  },
];

test('valid requests take the fast path and come back as the very value yup returns', (t) => {
  for (const body of VALID) {
    t.true(fast(body));
    const result = validateEvaluateRequest(body);
    t.deepEqual(result, yupOnly(body));
    t.true(result.ok && (result.value as unknown) === body);
    // yup in strict mode returns the value it was given: the fast path returns the same reference.
    t.is(evaluateRequestSchema.validateSync(body, { strict: true, abortEarly: false }), body as never);
  }
});

const INVALID: unknown[] = [
  null,
  'text',
  [],
  {},
  { operationKey: '', actor: { id: 'u' }, resource: { type: 'r', id: 'i' } },
  { operationKey: 'x', actor: { id: 'u', extra: 1 }, resource: { type: 'r', id: 'i' }, unknown: true },
  { operationKey: 'x', actor: null, resource: { type: 'r', id: 'i' } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, session: { continuityStrength: 1.5, recentHumanSignalAt: 'yesterday' } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, metadata: { localHour: 24, requestedCount: -1, velocityWindowCount: 1.5 } },
  { operationKey: 'x', actor: { id: 'u', roles: ['a', ''] }, resource: { type: 'r', id: 'i' } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, rawSignals: { 'bad key!': 1, fine: 'str' } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, challengeResult: { type: 'sms', passed: 'yes' } },
  // The evaluate endpoint's schema, the one every path uses: a passed result names its type.
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, challengeResult: { passed: true } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, challengeResult: { passed: true, challengeId: 'ch_1' } },
  { operationKey: 'x', actor: { id: 'u' }, resource: { type: 'r', id: 'i' }, requestData: { requestedCount: '5', other: 1 } },
  { operationKey: 'x'.repeat(129), actor: { id: 'u'.repeat(257) }, resource: { type: 'r', id: 'i' } },
];

test('invalid requests fall back to yup and get exactly its errors', (t) => {
  for (const body of INVALID) {
    t.false(fast(body), JSON.stringify(body));
    const result = validateEvaluateRequest(body);
    t.false(result.ok);
    t.deepEqual(result, yupOnly(body));
  }
});

// Random edits of valid requests: set any known (or unknown) path to a value from a pool of
// right, wrong and borderline ones, and compare the compiled answer with yup's.
const PATHS = [
  'operationKey', 'actor', 'actor.id', 'actor.authenticated', 'actor.role', 'actor.roles', 'actor.roles.0', 'actor.trusted', 'actor.sessionAgeMinutes', 'actor.extra',
  'resource', 'resource.type', 'resource.id', 'resource.ownerId', 'resource.classification', 'requestData', 'requestData.requestedCount', 'requestData.fields',
  'requestData.amount', 'requestData.currency', 'requestData.other', 'session', 'session.continuityStrength', 'session.recentHumanSignalAt',
  'session.recentHumanSignalAgeSeconds', 'session.isNewDevice', 'session.userAgent', 'metadata', 'metadata.localHour', 'metadata.requestedCount',
  'metadata.changedFields', 'metadata.changedFields.1', 'metadata.notes', 'metadata.proofToken', 'challengeResult', 'challengeResult.type',
  'challengeResult.passed', 'rawSignals', 'rawSignals.botScore', 'rawSignals.x y', 'extraTop',
];
const VALUES: unknown[] = [
  undefined, null, '', 'a', 'passkey', 'proof_token', 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(129), 'x'.repeat(257), 'x'.repeat(1025), '2026-01-02T03:04:05Z',
  '2026-13-45T99:00:00Z', '2026-01-02', -1, 0, 0.5, 1, 1.5, 23, 24, 1e9, Number.NaN, Number.POSITIVE_INFINITY, true, false, [], ['a'], [''], [1], {}, { a: 1 },
  Array.from({ length: 201 }, () => 'f'),
];

function setPath(root: Record<string, unknown>, path: string, value: unknown): void {
  // Signal names are map keys and may hold any character: only their first dot splits.
  const keys = path.startsWith('rawSignals.') ? ['rawSignals', path.slice('rawSignals.'.length)] : path.split('.');
  let cur: Record<string, unknown> = root;
  for (const k of keys.slice(0, -1)) {
    if (cur[k] === null || typeof cur[k] !== 'object') cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  const last = keys.at(-1)!;
  if (value === undefined) delete cur[last];
  else cur[last] = value;
}

test('random edits of valid requests: the compiled check always answers exactly as yup does', (t) => {
  let fastAccepted = 0;
  fc.assert(
    fc.property(fc.nat(VALID.length - 1), fc.array(fc.tuple(fc.constantFrom(...PATHS), fc.constantFrom(...VALUES)), { maxLength: 4 }), (which, edits) => {
      const body = structuredClone(VALID[which]!);
      for (const [path, value] of edits) setPath(body, path, value);
      const compiled = validateEvaluateRequest(body);
      const reference = yupOnly(body);
      if (fast(body)) {
        fastAccepted++;
        if (!reference.ok) return false; // the fast path accepted what yup refuses
      }
      t.deepEqual(compiled, reference);
      return true;
    }),
    { numRuns: 3000, seed: 7 },
  );
  t.true(fastAccepted > 100, `the fast path should take the valid ones (${fastAccepted})`);
});

test('schemas the fast path cannot run are refused when compiled, not misjudged', (t) => {
  t.throws(() => compileFastAccept(yup.object({ a: yup.string(), b: yup.string().when('a', { is: 'x', then: (s) => s.required() }) })));
  t.throws(() => compileFastAccept(yup.object({ a: yup.lazy(() => yup.string()) as never })));
});
