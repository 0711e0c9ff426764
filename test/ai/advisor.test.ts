import test from 'ava';
import { applyAssessment, createAdvisor } from '../../src/ai/advisor.js';
import type { ModelAdapter } from '../../src/ai/adapter.js';
import { minimize } from '../../src/ai/minimize.js';
import { reply, startFakeModel } from '../helpers/fakeModel.js';
import { exportInput, settings } from './fixtures.js';

const view = minimize(exportInput(), { allowFields: [] });

test('an answered delta is applied with model, rationale, labels and latency', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(reply.answer(12, 'bulk export from a weak session', ['bulk_export', 'weak_session']));
  const advisor = createAdvisor({ url: fake.url, model: 'llama3.1:8b', apiKey: 'sk-test' });

  const a = await advisor.assess(view, settings());

  t.is(a.status, 'applied');
  t.is(a.scoreDelta, 12);
  t.is(a.model, 'llama3.1:8b');
  t.is(a.rationale, 'bulk export from a weak session');
  t.deepEqual(a.labels, ['bulk_export', 'weak_session']);
  t.true(typeof a.latencyMs === 'number' && a.latencyMs >= 0);
  t.is(applyAssessment(48, a), 60);

  t.is(fake.requests.length, 1);
  const req = fake.requests[0];
  t.is(req.method, 'POST');
  t.is(req.path, '/v1/chat/completions');
  t.is(req.headers.authorization, 'Bearer sk-test');
  t.is(req.body.model, 'llama3.1:8b');
  t.deepEqual(req.body.response_format, { type: 'json_object' });
  t.is(req.body.messages[0].role, 'system');
  t.regex(req.body.messages[0].content, /scoreDelta/);
});

test('the per-operation model wins over TPS_AI_MODEL, and no API key means no authorization header', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  const advisor = createAdvisor({ url: fake.url, model: 'default-model' });
  const a = await advisor.assess(view, settings({ model: 'qwen2.5:3b' }));
  t.is(a.status, 'applied');
  t.is(a.model, 'qwen2.5:3b');
  t.is(fake.requests[0].body.model, 'qwen2.5:3b');
  t.is(fake.requests[0].headers.authorization, undefined);
});

test('a too-large delta is clamped to maxScoreDelta, and never beyond the hard cap of 30', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(reply.tooLarge(), reply.tooLarge(), reply.answer(-95), reply.answer(7.6));
  const advisor = createAdvisor({ url: fake.url, model: 'm' });

  const byDefault = await advisor.assess(view, settings());
  t.is(byDefault.status, 'applied');
  t.is(byDefault.scoreDelta, 15);

  const overCap = await advisor.assess(view, settings({ maxScoreDelta: 80 }));
  t.is(overCap.scoreDelta, 30);

  const negative = await advisor.assess(view, settings({ maxScoreDelta: 10 }));
  t.is(negative.scoreDelta, -10);

  const fractional = await advisor.assess(view, settings());
  t.is(fractional.scoreDelta, 8);

  // The model is told the range it may use.
  t.regex(fake.requests[2].body.messages[0].content, /between -10 and 10/);
});

test('applyAssessment keeps the final score within 0..100 and ignores non-applied deltas', (t) => {
  t.is(applyAssessment(95, { status: 'applied', scoreDelta: 15 }), 100);
  t.is(applyAssessment(5, { status: 'applied', scoreDelta: -15 }), 0);
  t.is(applyAssessment(40, { status: 'timeout', scoreDelta: 0 }), 40);
  t.is(applyAssessment(40, { status: 'error', scoreDelta: 9 }), 40);
  t.is(applyAssessment(40, undefined), 40);
});

test('a slow model times out within the operation budget and the call is aborted', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(reply.answer(1), reply.slow(10_000, reply.answer(20)));
  const advisor = createAdvisor({ url: fake.url, model: 'm' });
  // Warm-up: the first fetch in a process loads the HTTP client, which is not what is measured here.
  t.is((await advisor.assess(view, settings())).status, 'applied');

  const started = performance.now();
  const a = await advisor.assess(view, settings({ timeoutMs: 300 }));
  const took = performance.now() - started;

  t.is(a.status, 'timeout');
  t.is(a.scoreDelta, 0);
  // About the budget, far from the model's 10 s; the margin absorbs a loaded CI machine.
  t.true(took < 1500, `took ${took} ms for a 300 ms budget`);
  t.true((a.latencyMs ?? 0) >= 290);
  // The AbortController really hung up on the server rather than leaving the request running.
  for (let i = 0; i < 100 && !fake.requests[1]?.clientAborted; i++) await new Promise((r) => setTimeout(r, 20));
  t.is(fake.requests.length, 2);
  t.true(fake.requests[1].clientAborted);
});

test('TPS_AI_TIMEOUT_MS caps a larger per-operation budget', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(reply.slow(10_000));
  const advisor = createAdvisor({ url: fake.url, model: 'm', timeoutMs: 200 });

  const started = performance.now();
  const a = await advisor.assess(view, settings({ timeoutMs: 5000 }));
  t.is(a.status, 'timeout');
  t.true(performance.now() - started < 1000, 'the 200 ms ceiling, not the 5 s operation budget');
});

test('an adapter that ignores its abort signal still cannot exceed the budget', async (t) => {
  const stubborn: ModelAdapter = { complete: () => new Promise((resolve) => setTimeout(() => resolve({ scoreDelta: 5, rationale: '' }), 10_000).unref()) };
  const advisor = createAdvisor({ adapter: stubborn });
  const started = performance.now();
  const a = await advisor.assess(view, settings({ timeoutMs: 200 }));
  t.is(a.status, 'timeout');
  t.true(performance.now() - started < 1000);
});

test('garbage, wrongly shaped and non-JSON answers are invalid_output with no delta', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(
    reply.garbage(),
    reply.content('{"scoreDelta": "12", "rationale": "a string is not a number"}'),
    reply.content('{"rationale": "no delta"}'),
    reply.content('{"scoreDelta": 5, "rationale": "ok", "labels": "not-a-list"}'),
    reply.status(200, '<html>not the protocol</html>'),
  );
  const advisor = createAdvisor({ url: fake.url, model: 'm' });
  for (let i = 0; i < 5; i++) {
    const a = await advisor.assess(view, settings());
    t.is(a.status, 'invalid_output', `reply ${i}`);
    t.is(a.scoreDelta, 0);
  }
});

test('fenced JSON and omitted labels are accepted; long rationale and labels are trimmed', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  fake.script(
    reply.content('```json\n{"scoreDelta": 4, "rationale": "fenced"}\n```'),
    reply.answer(1, 'x'.repeat(500), ['a', 'b', 'c', 'd', 'e', 'f', 'g']),
  );
  const advisor = createAdvisor({ url: fake.url, model: 'm' });
  const fenced = await advisor.assess(view, settings());
  t.is(fenced.status, 'applied');
  t.is(fenced.scoreDelta, 4);
  t.deepEqual(fenced.labels, []);
  const long = await advisor.assess(view, settings());
  t.is(long.rationale?.length, 200);
  t.is(long.labels?.length, 5);
});

test('HTTP 500 and an unreachable server are errors with no delta', async (t) => {
  const fake = await startFakeModel();
  fake.script(reply.status(500));
  const advisor = createAdvisor({ url: fake.url, model: 'm' });
  const http500 = await advisor.assess(view, settings());
  t.is(http500.status, 'error');
  t.is(http500.scoreDelta, 0);

  const deadUrl = fake.url;
  await fake.close();
  const dead = await createAdvisor({ url: deadUrl, model: 'm' }).assess(view, settings());
  t.is(dead.status, 'error');
  t.is(dead.scoreDelta, 0);
});

test('no URL, or a disabled operation, is skipped without calling the model', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  t.deepEqual(await createAdvisor({}).assess(view, settings()), { status: 'skipped', scoreDelta: 0 });
  const a = await createAdvisor({ url: fake.url }).assess(view, settings({ enabled: false }));
  t.deepEqual(a, { status: 'skipped', scoreDelta: 0 });
  t.is(fake.requests.length, 0);
});

test('assess never throws, even when the adapter throws synchronously', async (t) => {
  const broken: ModelAdapter = {
    complete: () => {
      throw new TypeError('boom');
    },
  };
  const a = await createAdvisor({ adapter: broken }).assess(view, settings());
  t.is(a.status, 'error');
  t.is(a.scoreDelta, 0);
});
