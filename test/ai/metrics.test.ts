import test from 'ava';
import { Registry } from 'prom-client';
import { createAdvisor } from '../../src/ai/advisor.js';
import { minimize } from '../../src/ai/minimize.js';
import { registerAiMetrics } from '../../src/ai/metrics.js';
import { reply, startFakeModel } from '../helpers/fakeModel.js';
import { exportInput, settings } from './fixtures.js';

test('calls, latency, timeouts, errors and breaker state appear in the registry', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  const registry = new Registry();
  const metrics = registerAiMetrics(registry);
  const advisor = createAdvisor({ url: fake.url, model: 'm', metrics });
  const view = minimize(exportInput(), { allowFields: [] });

  fake.script(reply.answer(3), reply.status(500), reply.slow(10_000));
  await advisor.assess(view, settings());
  await advisor.assess(view, settings());
  await advisor.assess(view, settings({ timeoutMs: 200 }));
  await advisor.assess(view, settings({ enabled: false }));

  const text = await registry.metrics();
  for (const status of ['applied', 'timeout', 'error', 'skipped']) t.regex(text, new RegExp(`tps_ai_calls_total\\{status="${status}"\\} 1`));
  t.regex(text, /tps_ai_calls_total\{status="invalid_output"\} 0/);
  t.regex(text, /tps_ai_call_duration_seconds_count\{status="applied"\} 1/);
  t.regex(text, /tps_ai_timeouts_total 1/);
  t.regex(text, /tps_ai_errors_total\{kind="http"\} 1/);
  t.regex(text, /tps_ai_breaker_state 0/);
});
