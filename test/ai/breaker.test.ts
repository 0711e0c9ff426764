import test from 'ava';
import { Registry } from 'prom-client';
import { createAdvisor } from '../../src/ai/advisor.js';
import { CircuitBreaker } from '../../src/ai/breaker.js';
import { minimize } from '../../src/ai/minimize.js';
import { registerAiMetrics } from '../../src/ai/metrics.js';
import { reply, startFakeModel } from '../helpers/fakeModel.js';
import { exportInput, settings } from './fixtures.js';

const view = minimize(exportInput(), { allowFields: [] });

test('breaker: opens after N consecutive failures, half-opens after the cool-down, closes on success', (t) => {
  let now = 0;
  const seen: string[] = [];
  const b = new CircuitBreaker({ failureThreshold: 3, coolDownMs: 1000, now: () => now, onStateChange: (s) => seen.push(s) });
  const call = () => b.tryAcquire()!;

  b.onFailure(call());
  b.onFailure(call());
  b.onSuccess(call()); // a success resets the consecutive count
  b.onFailure(call());
  b.onFailure(call());
  t.is(b.state, 'closed');
  b.onFailure(call());
  t.is(b.state, 'open');
  t.is(b.tryAcquire(), undefined);

  now = 999;
  t.is(b.tryAcquire(), undefined);
  now = 1000;
  t.is(b.state, 'half_open');
  const trial = b.tryAcquire();
  t.deepEqual(trial && { trial: trial.trial }, { trial: true }, 'one trial call');
  t.is(b.tryAcquire(), undefined, 'only one trial at a time');
  b.onFailure(trial!);
  t.is(b.state, 'open', 'a failed trial reopens');

  now = 2000;
  b.onSuccess(call());
  t.is(b.state, 'closed');
  t.truthy(b.tryAcquire());
  t.deepEqual(seen, ['open', 'half_open', 'open', 'half_open', 'closed']);
});

test('advisor: failures open the breaker, which then reports error without calling the model, and closes after the cool-down', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  const registry = new Registry();
  const metrics = registerAiMetrics(registry);
  let now = 10_000;
  const advisor = createAdvisor({ url: fake.url, model: 'm', metrics, breaker: { failureThreshold: 3, coolDownMs: 5000, now: () => now } });
  const gauge = async () => (await metrics.breakerState.get()).values[0].value;

  // Three kinds of failure count alike: HTTP error, invalid output, timeout.
  fake.script(reply.status(500), reply.garbage(), reply.slow(10_000));
  t.is((await advisor.assess(view, settings())).status, 'error');
  t.is((await advisor.assess(view, settings())).status, 'invalid_output');
  t.is((await advisor.assess(view, settings({ timeoutMs: 200 }))).status, 'timeout');
  t.is(advisor.breaker.state, 'open');
  t.is(await gauge(), 2);

  fake.clearScript();
  fake.setDefault(reply.answer(9));
  await new Promise((r) => setTimeout(r, 100)); // let the timed-out request land (or not) before counting
  const seen = fake.requests.length;
  const started = performance.now();
  const rejected = await advisor.assess(view, settings());
  t.true(performance.now() - started < 100, 'reported without waiting');
  t.deepEqual(rejected, { status: 'error', scoreDelta: 0, model: 'm', latencyMs: 0 });
  await new Promise((r) => setTimeout(r, 100));
  t.is(fake.requests.length, seen, 'the model server saw no request while open');

  now += 5000; // cool-down over: one trial goes through and succeeds
  const trial = await advisor.assess(view, settings());
  t.is(trial.status, 'applied');
  t.is(trial.scoreDelta, 9);
  t.is(fake.requests.length, seen + 1);
  t.is(advisor.breaker.state, 'closed');
  t.is(await gauge(), 0);

  const errors = await metrics.errors.get();
  t.is(errors.values.find((v) => v.labels.kind === 'breaker_open')?.value, 1);
  // Refused calls never reached the model, so they are not in the latency histogram.
  t.regex(await registry.metrics(), /tps_ai_call_duration_seconds_count\{status="error"\} 1\n/);
});

test('advisor: a failed half-open trial reopens the breaker', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  let now = 0;
  const advisor = createAdvisor({ url: fake.url, model: 'm', breaker: { failureThreshold: 1, coolDownMs: 1000, now: () => now } });
  fake.setDefault(reply.status(503));
  t.is((await advisor.assess(view, settings())).status, 'error');
  t.is(advisor.breaker.state, 'open');
  now = 1000;
  t.is((await advisor.assess(view, settings())).status, 'error');
  t.is(fake.requests.length, 2);
  t.is(advisor.breaker.state, 'open');
  await advisor.assess(view, settings());
  t.is(fake.requests.length, 2);
});

test('breaker: a call that went out while closed and lands after it opened settles nothing', (t) => {
  let now = 0;
  const seen: string[] = [];
  const b = new CircuitBreaker({ failureThreshold: 2, coolDownMs: 1000, now: () => now, onStateChange: (s) => seen.push(s) });
  const slow = [b.tryAcquire()!, b.tryAcquire()!, b.tryAcquire()!];
  b.onFailure(b.tryAcquire()!);
  b.onFailure(b.tryAcquire()!);
  t.is(b.state, 'open');
  b.onSuccess(slow[0]!); // a slow call lands
  t.is(b.state, 'open', 'the cool-down stands');
  t.is(b.tryAcquire(), undefined);

  now = 1000;
  t.is(b.state, 'half_open');
  b.onSuccess(slow[1]!); // another late one, before any trial went out
  t.is(b.state, 'half_open', 'only the trial closes it');
  const trial = b.tryAcquire()!;
  b.onFailure(slow[2]!); // a late failure while the trial is out
  t.is(b.state, 'half_open', 'nor does a late failure reopen it');
  t.is(b.tryAcquire(), undefined, 'the trial is still the one out');
  b.onSuccess(trial);
  t.is(b.state, 'closed');
  t.deepEqual(seen, ['open', 'half_open', 'closed']);
});

test('breaker: a late success does not close a half-open breaker in place of its failing trial', (t) => {
  let now = 0;
  const b = new CircuitBreaker({ failureThreshold: 1, coolDownMs: 1000, now: () => now });
  const slow = b.tryAcquire()!;
  b.onFailure(b.tryAcquire()!);
  now = 1000;
  const trial = b.tryAcquire()!;
  b.onSuccess(slow); // lands during the trial
  t.is(b.state, 'half_open');
  b.onFailure(trial);
  t.is(b.state, 'open', 'the trial decides');
});
