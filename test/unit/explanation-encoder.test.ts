import test from 'ava';
import { spawnSync } from 'node:child_process';
import zlib from 'node:zlib';
import type { Explanation } from '../../src/api/types.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { decodeExplanation, encodeExplanation } from '../../src/store/explanationCodec.js';
import { EXPLANATION_DICTIONARY_V1 } from '../../src/store/explanationDictionary.js';
import { ExplanationEncoder } from '../../src/store/explanationEncoder.js';
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

const expected = (explanations: readonly Explanation[]) => explanations.map((e) => encodeExplanation(e));

test('encodes byte for byte as encodeExplanation, and decodeExplanation reads it back', async (t) => {
  t.true(varied.length >= 10);
  const encoder = new ExplanationEncoder();
  try {
    const encoded = await encoder.encode(varied);
    t.deepEqual(encoded, expected(varied));
    for (let i = 0; i < varied.length; i++) t.deepEqual(decodeExplanation(encoded[i]!), JSON.parse(JSON.stringify(varied[i])));
    t.deepEqual(await encoder.encode([varied[1]!]), expected([varied[1]!]), 'a batch of one');
  } finally {
    await encoder.close();
  }
});

test('explanations stored before the smaller deflate window (zlib defaults) still decode, and encode no larger now', (t) => {
  const dictionary = Buffer.from(EXPLANATION_DICTIONARY_V1);
  let before = 0;
  let now = 0;
  for (const e of varied) {
    const old = Buffer.concat([Buffer.of(1), zlib.deflateRawSync(JSON.stringify(e), { dictionary })]);
    t.deepEqual(decodeExplanation(old), JSON.parse(JSON.stringify(e)));
    before += old.length;
    now += encodeExplanation(e).length;
  }
  t.true(now <= before * 1.02, `${now} bytes now against ${before} before`);
});

test('concurrent encodes each get their own results, in order', async (t) => {
  const encoder = new ExplanationEncoder();
  try {
    const batches = Array.from({ length: 40 }, (_, i) => Array.from({ length: (i * 7) % 13 }, (_, j) => varied[(i + j * 3) % varied.length]!));
    const results = await Promise.all(batches.map((b) => encoder.encode(b)));
    results.forEach((encoded, i) => t.deepEqual(encoded, expected(batches[i]!), `batch ${i}`));
  } finally {
    await encoder.close();
  }
});

test('an empty batch is empty, and an explanation JSON cannot hold rejects only its own call', async (t) => {
  const encoder = new ExplanationEncoder();
  try {
    t.deepEqual(await encoder.encode([]), []);
    const unserializable = { signals: [], rules: [], facts: { n: 1n } } as unknown as Explanation;
    const bad = encoder.encode([varied[0]!, unserializable]);
    const good = encoder.encode([varied[0]!]);
    await t.throwsAsync(bad, { message: /BigInt/ });
    t.deepEqual(await good, expected([varied[0]!]));
  } finally {
    await encoder.close();
  }
});

test('a worker that dies fails the encodes waiting on it, and the next encode starts a new one', async (t) => {
  const encoder = new ExplanationEncoder();
  try {
    await encoder.encode([varied[0]!]);
    // The second batch takes the worker long enough that the kill lands while it is owed.
    const batches = [varied, Array.from({ length: 100 }, () => varied).flat()];
    const waiting = batches.map((b) => encoder.encode(b));
    await encoder.killWorker();
    const settled = await Promise.allSettled(waiting);
    settled.forEach((s, i) => (s.status === 'fulfilled' ? t.deepEqual(s.value, expected(batches[i]!)) : t.regex(String(s.reason), /exited/)));
    t.is(settled[1]!.status, 'rejected');
    t.deepEqual(await encoder.encode(varied), expected(varied));
  } finally {
    await encoder.close();
  }
});

test('close stops the worker: waiting encodes reject and later ones are refused', async (t) => {
  const encoder = new ExplanationEncoder();
  const waiting = encoder.encode(Array.from({ length: 100 }, () => varied).flat());
  await encoder.close();
  await t.throwsAsync(waiting, { message: /exited/ });
  await t.throwsAsync(encoder.encode(varied), { message: /closed/ });
  await encoder.close();
  await new ExplanationEncoder().close(); // never started
});

test('the worker keeps the process alive only while it owes results', (t) => {
  const module = new URL('../../src/store/explanationEncoder.ts', import.meta.url).href;
  // No close(): the process must still deliver the result, then exit on its own.
  const script = `
    const { ExplanationEncoder } = await import(${JSON.stringify(module)});
    new ExplanationEncoder().encode([{ signals: [], rules: [] }]).then((r) => console.log('encoded', r.length));
  `;
  const child = spawnSync(process.execPath, ['--import=tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 20_000 });
  t.is(child.signal, null, 'exited by itself, not by the timeout');
  t.is(child.status, 0, child.stderr);
  t.is(child.stdout.trim(), 'encoded 1');
});
