import anyTest, { type TestFn } from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { reply, startFakeModel, type FakeModel } from '../helpers/fakeModel.js';
import { get, post, startTps, type RunningTps } from '../helpers/tps.js';

// The advisory inside evaluate, over real HTTP: TPS talks to a real (scripted) chat-completions
// server. Each test starts its own TPS so breaker state and scripts never cross.
const test = anyTest.serial as TestFn<{ model: FakeModel }>;

test.beforeEach(async (t) => {
  t.context.model = await startFakeModel();
});
test.afterEach.always(async (t) => t.context.model?.close());

async function tpsWith(model: FakeModel, env: Record<string, string> = {}): Promise<RunningTps> {
  return startTps({ env: { TPS_AI_URL: model.url, TPS_AI_MODEL: 'fake-risk-1', ...env } });
}

// 54.5 before the advisory: volume 20 + missing human signal 15 + continuity unknown 12.5 + high sensitivity 7.
const bulkExport = (extra: Partial<EvaluateRequest> = {}): EvaluateRequest => ({
  operationKey: 'invoice.export',
  actor: { id: 'user_secret_id_77', authenticated: true, roles: ['finance'] },
  resource: { type: 'invoice', id: 'res_secret_id_88' },
  requestData: { requestedCount: 5000, fields: ['email', 'total'] },
  metadata: { notes: 'NOTE-DO-NOT-SEND', proofToken: 'TOKEN-DO-NOT-SEND' },
  session: { ipAddress: '198.51.100.23', userAgent: 'AGENT-DO-NOT-SEND', sessionId: 'sess_1' },
  ...extra,
});

const evaluate = (tps: RunningTps, body: unknown) => post(`${tps.url}/api/evaluate`, body, tps.secretKey);

test('an applied delta moves the band and so the decision; the event records the assessment', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.script(reply.answer(0));
    const base = (await evaluate(tps, bulkExport())).body;
    t.is(base.decision, 'allow_redacted');
    t.is(base.riskBand, 'medium');
    t.is(base.aiAssessment.status, 'applied');

    t.context.model.script(reply.answer(12, 'export volume unusual for this actor', ['volume']));
    const moved = (await evaluate(tps, bulkExport())).body;
    t.is(moved.aiAssessment.status, 'applied');
    t.is(moved.aiAssessment.scoreDelta, 12);
    t.is(moved.score, base.score + 12);
    t.is(moved.riskBand, 'high');
    t.is(moved.decision, 'step_up_required', 'the policy step-up threshold (65) is now crossed');
    t.true(moved.reasons.includes('score_step_up_threshold'));

    const event = await tps.tps.events.get(tps.environment, moved.telemetryId);
    t.is(event!.score, moved.score);
    t.is(event!.explanation.baseScore, base.score);
    t.like(event!.explanation.aiAssessment, { status: 'applied', scoreDelta: 12, model: 'fake-risk-1', rationale: 'export volume unusual for this actor', labels: ['volume'] });
    t.is(typeof event!.explanation.aiAssessment!.latencyMs, 'number');

    const metrics = (await get(`${tps.url}/metrics`)).body as string;
    t.regex(metrics, /tps_ai_calls_total\{status="applied"\} 2/);
  } finally {
    await tps.close();
  }
});

test('the model sees only the minimized view: no ids, IPs, user agents, notes or tokens', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.script(reply.answer(0));
    await evaluate(tps, bulkExport({ metadata: { ...bulkExport().metadata, changedFields: ['status'] } }));
    t.is(t.context.model.requests.length, 1);
    const request = t.context.model.requests[0]!;
    t.is(request.body.model, 'fake-risk-1');
    const raw = request.rawBody;
    for (const secret of ['user_secret_id_77', 'res_secret_id_88', '198.51.100.23', 'AGENT-DO-NOT-SEND', 'NOTE-DO-NOT-SEND', 'TOKEN-DO-NOT-SEND', 'sess_1', tps.secretKey]) {
      t.false(raw.includes(secret), secret);
    }
    const view = JSON.parse(request.body.messages.find((m: { role: string }) => m.role === 'user').content);
    t.deepEqual(Object.keys(view).sort(), ['band', 'changedFields', 'counts', 'operation', 'requestDataFields', 'requestedFields', 'score', 'signals']);
    t.deepEqual(view.operation, { key: 'invoice.export', sensitivity: 'high', actionType: 'export', resourceType: 'invoice' });
    t.deepEqual(view.counts, { requestedCount: 5000 });
    t.deepEqual(view.changedFields, ['status']);
    t.deepEqual(view.requestedFields, ['email', 'total']);
    t.is(view.signals.bulk_or_export_volume, 1);
  } finally {
    await tps.close();
  }
});

test('a delta beyond the configured maximum is clamped (default 15)', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.script(reply.answer(0), reply.tooLarge());
    const base = (await evaluate(tps, bulkExport())).body;
    const clamped = (await evaluate(tps, bulkExport())).body;
    t.is(clamped.aiAssessment.scoreDelta, 15);
    t.is(clamped.score, base.score + 15);
  } finally {
    await tps.close();
  }
});

test('a slow model times out within the budget and the base decision stands', async (t) => {
  const tps = await tpsWith(t.context.model, { TPS_AI_TIMEOUT_MS: '150' });
  try {
    t.context.model.script(reply.slow(5000, reply.answer(15)));
    const started = Date.now();
    const res = (await evaluate(tps, bulkExport())).body;
    t.true(Date.now() - started < 4000, 'evaluate did not wait for the model');
    t.is(res.aiAssessment.status, 'timeout');
    t.is(res.aiAssessment.scoreDelta, 0);
    t.is(res.score, 54.5);
    t.is(res.decision, 'allow_redacted');
  } finally {
    await tps.close();
  }
});

test('malformed output is invalid_output with no delta', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.script(reply.garbage(), reply.content('{"scoreDelta": "12", "rationale": "x", "labels": []}'));
    for (let i = 0; i < 2; i++) {
      const res = (await evaluate(tps, bulkExport())).body;
      t.is(res.aiAssessment.status, 'invalid_output');
      t.is(res.aiAssessment.scoreDelta, 0);
      t.is(res.score, 54.5);
    }
  } finally {
    await tps.close();
  }
});

test('the breaker opens after repeated failures and then answers error without calling the model', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.setDefault(reply.status(500));
    for (let i = 0; i < 5; i++) t.is((await evaluate(tps, bulkExport())).body.aiAssessment.status, 'error');
    const calls = t.context.model.requests.length;
    const open = (await evaluate(tps, bulkExport())).body;
    t.is(open.aiAssessment.status, 'error');
    t.is(open.aiAssessment.scoreDelta, 0);
    t.is(open.decision, 'allow_redacted');
    t.is(t.context.model.requests.length, calls, 'no call reached the model');
    t.regex((await get(`${tps.url}/metrics`)).body as string, /tps_ai_breaker_state 2/);
  } finally {
    await tps.close();
  }
});

test('the model cannot lift a hard rule: a missing role, a throttle limit', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    t.context.model.setDefault(reply.answer(-15));
    const noRole = (await evaluate(tps, bulkExport({ actor: { id: 'u', roles: ['sales'] } }))).body;
    t.is(noRole.aiAssessment.status, 'applied');
    t.is(noRole.decision, 'deny');
    t.true(noRole.reasons.includes('policy_role_required'));

    const throttled = (
      await evaluate(tps, {
        operationKey: 'payment_transaction.create',
        actor: { id: 'u', role: 'finance' },
        resource: { type: 'payment_method', id: 'pm' },
        metadata: { velocityWindowCount: 500 },
      })
    ).body;
    t.is(throttled.aiAssessment.status, 'applied');
    t.is(throttled.decision, 'throttle');
  } finally {
    await tps.close();
  }
});

test('a satisfied step-up retry keeps the challenged score and does not call the model again', async (t) => {
  const tps = await tpsWith(t.context.model);
  try {
    const payment = { operationKey: 'payment_transaction.create', actor: { id: 'u', role: 'finance' }, resource: { type: 'payment_method', id: 'pm' }, requestData: { amount: 25_000, currency: 'EUR' } };
    t.context.model.script(reply.answer(9));
    const first = (await evaluate(tps, payment)).body;
    t.is(first.decision, 'step_up_required');
    t.is(first.challenge.type, 'proof_token');
    t.is(first.aiAssessment.scoreDelta, 9);
    const calls = t.context.model.requests.length;
    const retry = (await evaluate(tps, { ...payment, challengeResult: { type: 'proof_token', passed: true } })).body;
    t.is(retry.decision, 'allow');
    t.is(retry.score, first.score);
    t.is(retry.aiAssessment, undefined);
    t.is(t.context.model.requests.length, calls);
  } finally {
    await tps.close();
  }
});

test('without TPS_AI_URL the configured operations report skipped; others carry no assessment', async (t) => {
  const tps = await startTps();
  try {
    const exported = (await evaluate(tps, bulkExport())).body;
    t.deepEqual(exported.aiAssessment, { status: 'skipped', scoreDelta: 0 });
    t.is(exported.score, 54.5);
    const created = (await evaluate(tps, { operationKey: 'customer.create', actor: { id: 'u' }, resource: { type: 'customer', id: 'c' } })).body;
    t.is(created.aiAssessment, undefined);
  } finally {
    await tps.close();
  }
});
