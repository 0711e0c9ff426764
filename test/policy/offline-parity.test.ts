import test from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { runFixtures } from '../../src/fixtures/suite.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { recover, redecide } from '../../src/replay/recorded.js';
import { KnexEventStore } from '../../src/store/eventStore.js';
import { runCli } from '../helpers/cli.js';
import { bareEvent } from '../helpers/events.js';
import { openFreshStore, tempConfig } from '../helpers/config.js';
import { reply, startFakeModel } from '../helpers/fakeModel.js';
import { post, REPO_ROOT, startTps } from '../helpers/tps.js';

// The offline paths (fixtures, replay) against the server's evaluate path, and the replay command's
// handling of its inputs (time bounds, the store it is pointed at).

const payment: EvaluateRequest = {
  operationKey: 'payment_transaction.create',
  actor: { id: 'fin-1', authenticated: true, roles: ['finance'] },
  resource: { type: 'payment_method', id: 'pm-1' },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  requestData: { amount: 250, currency: 'EUR' },
};

test.serial('an advisory delta offline is rounded and clamped to maxScoreDelta as the server clamps a model answer', async (t) => {
  const model = await startFakeModel();
  const cfg = tempConfig({ fixtures: false });
  const lowered = tempConfig({ fixtures: false });
  lowered.replace('rules/payments.yaml', 'ai:\n  enabled: true', 'ai:\n  enabled: true\n  maxScoreDelta: 5');
  const env = { TPS_AI_URL: model.url, TPS_AI_MODEL: 'fake', TPS_WATCH_CONFIG: 'false' };
  const tps = await startTps({ configDir: cfg.dir, env });
  const tpsLowered = await startTps({ configDir: lowered.dir, env });
  t.teardown(async () => {
    await tps.close();
    await tpsLowered.close();
    await model.close();
    cfg.cleanup();
    lowered.cleanup();
  });

  // The model answers 40.4; the server applies 15 (the default maxScoreDelta), or 5 where capped so.
  model.setDefault(reply.answer(40.4));
  const served = (await post(`${tps.url}/api/evaluate`, payment, tps.secretKey)).body;
  t.like(served, { score: 26.25, aiAssessment: { status: 'applied', scoreDelta: 15 } });
  const servedLowered = (await post(`${tpsLowered.url}/api/evaluate`, payment, tpsLowered.secretKey)).body;
  t.like(servedLowered, { score: 16.25, aiAssessment: { status: 'applied', scoreDelta: 5 } });

  // A fixture naming the model's answer gets the server's score.
  cfg.write(
    'rules/payments.fixtures.yaml',
    `cases:
  - name: the model's 40.4
    request: ${JSON.stringify(payment)}
    ai: { status: applied, scoreDelta: 40.4 }
    expect: { decision: ${served.decision}, score: ${served.score}, band: ${served.riskBand} }
`,
  );
  const run = await runFixtures(cfg.dir);
  t.deepEqual(run.problems, []);
  t.deepEqual(run.results.map((r) => [r.ok, r.steps.flatMap((s) => s.mismatches)]), [[true, []]]);

  // Replaying the recorded event with the lowered cap gives what the server with that cap answered.
  const event = await tps.tps.events.get(tps.environment, served.telemetryId);
  const recovered = recover(event!);
  if (!recovered.ok) return t.fail(recovered.reason);
  const replayed = await redecide(loadCatalog(lowered.dir), recovered.tx);
  t.is(replayed.response.score, servedLowered.score);
  t.like(replayed.response.aiAssessment, { status: 'applied', scoreDelta: 5 });
  t.is((await redecide(loadCatalog(cfg.dir), recovered.tx)).response.score, served.score);
});

test('a retry without its own `at` comes at the clock of the step it repeats', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write(
    'rules/payments.fixtures.yaml',
    `cases:
  - name: a proof token lets a large payment through, an hour in the past
    steps:
      - request: ${JSON.stringify({ ...payment, requestData: { amount: 15000 }, session: { sessionId: 's-1', recentHumanSignalAt: '2025-01-08T11:59:50Z' } })}
        at: '2025-01-08T12:00:00Z'
        expect: { decision: step_up_required, challenge: proof_token }
      - retry: { type: proof_token, passed: true }
        expect: { decision: allow, reasons: { includes: [challenge_satisfied], excludes: [challenge_invalid] } }
`,
  );
  const run = await runFixtures(cfg.dir);
  t.deepEqual(run.problems, []);
  t.deepEqual(run.results.map((r) => [r.ok, r.steps.flatMap((s) => s.mismatches)]), [[true, []]]);
});

const eventAt = (telemetryId: string, iso: string) => bareEvent(telemetryId, { createdAt: Date.parse(iso) });

test.serial('tps replay reads --since/--until as instants: a date is UTC midnight, a time needs its offset', async (t) => {
  const { db, url, close } = await openFreshStore('sqlite');
  t.teardown(close);
  await new KnexEventStore(db).insertBatch([eventAt('e-11h', '2025-01-07T11:00:00Z'), eventAt('e-13h', '2025-01-07T13:00:00Z')]);
  // A zone other than UTC: a time without an offset would be read in it.
  const replay = (...args: string[]) => runCli(['replay', REPO_ROOT, '--format', 'json', ...args], { DATABASE_URL: url, TZ: 'America/New_York' });
  const examined = async (...args: string[]) => {
    const r = await replay(...args);
    t.is(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { examined: number }).examined;
  };
  t.is(await examined('--since', '2025-01-07'), 2);
  t.is(await examined('--until', '2025-01-07'), 0);
  t.is(await examined('--since', '2025-01-07T12:00:00Z'), 1);
  t.is(await examined('--since', '2025-01-07T07:00:00-05:00'), 1);
  for (const bad of ['2025-01-07T12:00:00', '2025-02-30', 'Jan 7 2025']) {
    const r = await replay('--since', bad);
    t.is(r.code, 2, bad);
    t.regex(r.stderr, /--since must be an ISO 8601 date .* or date-time with an offset/, bad);
  }
});
