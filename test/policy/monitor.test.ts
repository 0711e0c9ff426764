import test from 'ava';
import { runFixtures } from '../../src/fixtures/suite.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { replay } from '../../src/replay/replay.js';
import { tempConfig } from '../helpers/config.js';
import { post, REPO_ROOT, startTps } from '../helpers/tps.js';

// Monitor mode: the service answers allow, the event records the would-be decision and reasons and
// is marked monitored. Set on a policy (it changes the policy version) or on one operation.

function monitorConfig() {
  const cfg = tempConfig({ fixtures: false });
  cfg.write('rules/pii-read.yaml', `${cfg.read('rules/pii-read.yaml')}mode: monitor\n`);
  cfg.write('operations/customer.create.yaml', `${cfg.read('operations/customer.create.yaml')}mode: monitor\n`);
  return cfg;
}

const piiRequest = {
  operationKey: 'customer.read_pii',
  actor: { id: 'fin-1', authenticated: true, roles: ['finance'] },
  resource: { type: 'customer', id: 'cus-1', classification: 'PII' },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
};

const riskyCreate = {
  operationKey: 'customer.create',
  actor: { id: 'u-2', authenticated: false },
  resource: { type: 'customer', id: 'cus-2' },
  session: { sessionId: 's-2', isNewDevice: true, geoChanged: true, networkChanged: true },
};

test('a policy in monitor mode answers allow, records the would-be deny, and has its own version', async (t) => {
  const cfg = monitorConfig();
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const { status, body } = await post(`${tps.url}/api/evaluate`, piiRequest, tps.secretKey);
  t.is(status, 200);
  t.is(body.decision, 'allow');
  t.deepEqual(body.reasons, ['high_sensitivity_operation', 'sensitive_resource', 'policy_role_required', 'monitor_mode']);
  t.is(body.challenge, undefined);
  t.is(body.redaction, undefined);
  const enforcing = loadCatalog(REPO_ROOT).policies.get('pii-read')!.versionId;
  t.regex(body.policyVersionId, /^pv_/);
  t.not(body.policyVersionId, enforcing);

  const event = (await tps.tps.events.get('test', body.telemetryId))!;
  t.true(event.monitored);
  t.is(event.decision, 'allow');
  t.deepEqual(event.explanation.monitor, { decision: 'deny', reasons: ['high_sensitivity_operation', 'sensitive_resource', 'policy_role_required'] });

  // A support agent would have been redacted: the event keeps which fields.
  const support = await post(`${tps.url}/api/evaluate`, { ...piiRequest, actor: { id: 'agent-1', authenticated: true, roles: ['support'] } }, tps.secretKey);
  t.is(support.body.decision, 'allow');
  const supportEvent = (await tps.tps.events.get('test', support.body.telemetryId))!;
  t.is(supportEvent.explanation.monitor!.decision, 'allow_redacted');
  t.deepEqual(supportEvent.explanation.monitor!.redaction, { fields: ['customer.email', 'customer.phone', 'customer.dateOfBirth', 'customer.address'], strategy: 'mask' });

  // An enforcing operation beside it is untouched.
  const payment = await post(
    `${tps.url}/api/evaluate`,
    { operationKey: 'payment_transaction.create', actor: { id: 'x', roles: ['support'] }, resource: { type: 'payment_method', id: 'pm' } },
    tps.secretKey,
  );
  t.is(payment.body.decision, 'deny');
  t.false((await tps.tps.events.get('test', payment.body.telemetryId))!.monitored);
});

test('an operation in monitor mode issues no challenge; the would-be step-up is recorded', async (t) => {
  const cfg = monitorConfig();
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const first = await post(`${tps.url}/api/evaluate`, riskyCreate, tps.secretKey);
  t.is(first.body.decision, 'allow');
  t.true(first.body.reasons.includes('score_step_up_threshold'));
  t.is(first.body.reasons.at(-1), 'monitor_mode');
  t.is(first.body.challenge, undefined);
  const event = (await tps.tps.events.get('test', first.body.telemetryId))!;
  t.true(event.monitored);
  t.is(event.explanation.monitor!.decision, 'step_up_required');
  t.is(event.explanation.monitor!.challengeType, 'passkey');
  t.is(event.explanation.challenge, undefined);

  // Nothing was issued, so a "passed" retry is an invalid challenge: would-be step-up again, answered allow.
  const retry = await post(`${tps.url}/api/evaluate`, { ...riskyCreate, challengeResult: { type: 'passkey', passed: true } }, tps.secretKey);
  t.is(retry.body.decision, 'allow');
  const retryEvent = (await tps.tps.events.get('test', retry.body.telemetryId))!;
  t.deepEqual(retryEvent.explanation.monitor!.reasons.slice(-1), ['challenge_invalid']);

  // Replay with the monitor lifted: what enforcing would change, and how many were monitored.
  const enforce = tempConfig({ fixtures: false });
  t.teardown(enforce.cleanup);
  const report = await replay(tps.tps.db.knex, loadCatalog(enforce.dir));
  t.is(report.replayed, 2);
  t.deepEqual(report.monitored, { recorded: 2, replayed: 0 });
  t.deepEqual(report.transitions.map((x) => [x.from, x.to, x.count]), [['allow', 'step_up_required', 2]]);
});

test('fixtures can expect the would-be decision of a monitored policy', async (t) => {
  const cfg = monitorConfig();
  t.teardown(cfg.cleanup);
  cfg.write(
    'rules/pii-read.fixtures.yaml',
    [
      'cases:',
      '  - name: finance would be denied',
      `    request: ${JSON.stringify(piiRequest)}`,
      '    expect:',
      '      decision: allow',
      '      reasons: { includes: [monitor_mode] }',
      '      monitor: { decision: deny, reasons: [high_sensitivity_operation, sensitive_resource, policy_role_required] }',
      '  - name: wrong would-be decision',
      `    request: ${JSON.stringify(piiRequest)}`,
      '    expect: { decision: allow, monitor: { decision: allow } }',
      '',
    ].join('\n'),
  );
  const run = await runFixtures(cfg.dir);
  t.deepEqual(run.problems, []);
  t.deepEqual(
    run.results.map((r) => [r.name, r.ok, r.steps[0]!.mismatches]),
    [
      ['finance would be denied', true, []],
      ['wrong would-be decision', false, ['monitor decision: expected allow, got deny']],
    ],
  );
  t.deepEqual(run.coverage[0]!.covered, ['deny']);
});
