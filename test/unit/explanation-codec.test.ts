import test from 'ava';
import fc from 'fast-check';
import zlib from 'node:zlib';
import type { Explanation } from '../../src/api/types.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { decodeExplanation, encodeExplanation } from '../../src/store/explanationCodec.js';
import { EXPLANATION_DICTIONARY_V1 } from '../../src/store/explanationDictionary.js';
import { generateEvents } from '../events/helpers.js';
import { REPO_ROOT } from '../helpers/tps.js';


/** Explanations as the evaluate path makes them, one per decision of the sample configuration. */
async function evaluatedExplanations(): Promise<Explanation[]> {
  const offline = new OfflineEvaluator({ catalog: loadCatalog(REPO_ROOT) });
  const session = { sessionId: 'sess-1', continuityStrength: 0.9, recentHumanSignalAgeSeconds: 5 };
  const stepUp = { operationKey: 'bank_account.update', actor: { id: 'user-2', authenticated: true }, resource: { type: 'account', id: 'acct-2' }, requestData: { fields: ['iban'] }, session: { sessionId: 'sess-2', continuityStrength: 0.9 } };
  for (const body of [
    { operationKey: 'customer.create', actor: { id: 'user-1', authenticated: true, role: 'sales' }, resource: { type: 'customer', id: 'cust-1' }, session },
    { operationKey: 'invoice.export', actor: { id: 'user-1', authenticated: true, roles: ['finance'] }, resource: { type: 'invoice', id: 'inv-1' }, metadata: { requestedCount: 5000 }, session },
    stepUp,
    { ...stepUp, challengeResult: { type: 'passkey' as const, passed: true } },
    { operationKey: 'payment_transaction.create', actor: { id: 'user-3', authenticated: true, role: 'finance' }, resource: { type: 'payment_method', id: 'pm-1' }, requestData: { amount: 120, currency: 'EUR' }, metadata: { velocityWindowCount: 25 }, session },
    { operationKey: 'customer.read_pii', actor: { id: 'user-4', authenticated: true, role: 'sales' }, resource: { type: 'customer', id: 'cust-4' }, session },
    { operationKey: 'customer.read_pii', actor: { id: 'user-5', authenticated: true, roles: ['support'] }, resource: { type: 'customer', id: 'cust-5', classification: 'pii' }, session },
  ]) {
    await offline.evaluate(body, 'unit');
  }
  return offline.events.map((e) => e.explanation);
}

const handMade: Explanation[] = [
  { signals: [], rules: [] },
  {
    signals: [{ name: 'velocity', value: 0.5, weight: 10, contribution: 5, reason: 'velocity_limit_exceeded' }],
    rules: [{ name: 'score-deny', fired: true, decision: 'deny', reason: 'score_deny_threshold' }],
    thresholds: { medium: 30, high: 60, stepUp: 50, deny: 80 },
    retryAfterSeconds: 30,
    challengeResult: 'failed',
    baseScore: -0,
    normalizedSignals: { velocity: 0.1 + 0.2, tiny: 5e-324, huge: 1e21 },
    // Unicode across the BMP and beyond, escapes, and a lone surrogate (JSON.stringify escapes it).
    facts: { actor: { id: 'Zoë 🧾 用户 \u2028 "quoted" \\ \n \ud800' }, nothing: null, list: [1, 'two', { three: [] }] },
  },
  { signals: [], rules: [], facts: { blob: 'x'.repeat(70_000) + '€'.repeat(20_000), ...Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i])) } },
];

let varied: Explanation[];
test.before(async () => {
  varied = [...(await evaluatedExplanations()), ...handMade];
});

test('decodeExplanation reads back what encodeExplanation stored, evaluated and hand-made alike', (t) => {
  t.true(varied.length >= 10);
  for (const e of varied) t.deepEqual(decodeExplanation(encodeExplanation(e)), JSON.parse(JSON.stringify(e)));
});

test('property: any JSON an explanation can hold comes back exactly, in format 2 and in format 1', (t) => {
  // Keys drawn from the dictionaries' own tokens as well as arbitrary unicode (lone surrogates too).
  const key = fc.oneof(fc.constantFrom('signals', 'rules', 'name', 'value', 'facts', 'weak_session_continuity', '__proto__', 'constructor', ''), fc.string({ unit: 'binary' }));
  const value = fc.letrec((tie) => ({
    any: fc.oneof({ depthSize: 'small' }, fc.string({ unit: 'binary' }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('any'), { maxLength: 5 }), fc.dictionary(key, tie('any'), { maxKeys: 5 })),
  })).any;
  const dictionary = Buffer.from(EXPLANATION_DICTIONARY_V1);
  fc.assert(
    fc.property(fc.dictionary(key, value, { maxKeys: 6 }), fc.array(value, { maxLength: 3 }), (facts, list) => {
      const e = { signals: [], rules: [], facts, list } as unknown as Explanation;
      const json = JSON.parse(JSON.stringify(e)); // JSON's own normalisation: -0 is 0
      const v1 = Buffer.concat([Buffer.of(1), zlib.deflateRawSync(JSON.stringify(e), { dictionary })]);
      return JSON.stringify(decodeExplanation(encodeExplanation(e))) === JSON.stringify(json) && JSON.stringify(decodeExplanation(v1)) === JSON.stringify(json);
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('the store\'s generated explanations, small ones included, are stored smaller than their JSON', (t) => {
  const explanation = generateEvents('x', 1, 0)[0]!.explanation;
  const rich = { ...explanation, facts: { operation: { key: 'invoice.export' }, actor: { id: 'user_1', roles: ['finance'] } }, baseScore: 12.5, thresholds: { medium: 30, high: 60 } };
  for (const e of [explanation, rich, { signals: [], rules: [], normalizedSignals: { velocity: 0.25 } }]) {
    const stored = encodeExplanation(e);
    t.deepEqual(decodeExplanation(stored), e);
    t.true(stored.length < JSON.stringify(e).length);
  }
});

test('explanations stored in format 1 (raw deflate with the first dictionary, either window) still decode', (t) => {
  const dictionary = Buffer.from(EXPLANATION_DICTIONARY_V1);
  for (const e of varied) {
    for (const window of [{}, { windowBits: 14, memLevel: 5 }]) {
      const v1 = Buffer.concat([Buffer.of(1), zlib.deflateRawSync(JSON.stringify(e), { ...window, dictionary })]);
      t.deepEqual(decodeExplanation(v1), JSON.parse(JSON.stringify(e)));
    }
  }
});

test('an evaluated explanation is written in format 2 and stored in a sixth of its JSON or less', async (t) => {
  for (const e of await evaluatedExplanations()) {
    const stored = encodeExplanation(e);
    const json = Buffer.byteLength(JSON.stringify(e));
    t.is(stored[0], 2);
    t.true(stored.length * 6 <= json && stored.length < 200, `${stored.length} bytes stored for ${json} bytes of JSON`);
  }
});

test('a stored explanation names its format; one it does not know is refused, not misread', (t) => {
  const stored = encodeExplanation(varied[0]!);
  t.throws(() => decodeExplanation(Buffer.concat([Buffer.of(99), stored.subarray(1)])), { message: /unknown format 99/ });
});
