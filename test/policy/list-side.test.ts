// A rule's list side is not always a literal validation checked: a `value: { fact }` the request
// left out, or the request's fact itself after `swap:`. json-rules-engine's in/notIn ran
// `list.indexOf(…)` on it and threw, and the evaluation answered 500 internal_error, which a
// fail-open client reads as allow. A list side that is not a list now holds nothing (README, "Policies").
import test from 'ava';
import { tempConfig } from '../helpers/config.js';
import { post, startTps } from '../helpers/tps.js';
import { runScript } from '../helpers/script.js';

const RULES = `rules:
  - name: approvers-only
    when: { fact: actor.id, operator: notIn, value: { fact: requestData.approvers } }
    then: { decision: deny, reason: not_an_approver }
  - name: no-ssn
    when: { fact: requestData.columns, operator: "swap:in", value: customer.ssn }
    then: { decision: deny, reason: ssn_requested }
  - name: any-approver-is-admin
    when: { fact: actor.id, operator: "someValue:equal", value: { fact: requestData.admins } }
    then: { decision: step_up_required, reason: admin_approver }
`;

const request = (requestData?: Record<string, unknown>) => ({
  operationKey: 'customer.create',
  actor: { id: 'u1', authenticated: true },
  resource: { type: 'customer', id: 'c1' },
  session: { sessionId: 's1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  ...(requestData ? { requestData } : {}),
});

test('a list side that is absent or not a list is a list of nothing: 200 deny or allow, never 500', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  cfg.write('rules/standard.yaml', `${cfg.read('rules/standard.yaml')}${RULES}`);
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const evaluate = async (requestData?: Record<string, unknown>) => {
    const { status, body } = await post(`${tps.url}/api/evaluate`, request(requestData), tps.secretKey);
    t.is(status, 200, JSON.stringify({ requestData, body }));
    return { decision: body.decision, reasons: body.reasons };
  };

  // No approvers: u1 is in none, notIn holds. The other two read nothing and do not fire.
  t.deepEqual(await evaluate(), { decision: 'deny', reasons: ['not_an_approver'] });
  // Approvers that are not a list: u1 is not a member of them either (no substring match).
  t.deepEqual(await evaluate({ approvers: 'u1,u2' }), { decision: 'deny', reasons: ['not_an_approver'] });
  t.deepEqual(await evaluate({ approvers: 7 }), { decision: 'deny', reasons: ['not_an_approver'] });
  t.deepEqual(await evaluate({ approvers: ['u1'] }), { decision: 'allow', reasons: ['low_risk_operation'] });

  // After swap: the request's columns stand where the list is looked into.
  t.deepEqual(await evaluate({ approvers: ['u1'], columns: ['customer.ssn'] }), { decision: 'deny', reasons: ['ssn_requested'] });
  t.deepEqual(await evaluate({ approvers: ['u1'], columns: 42 }), { decision: 'allow', reasons: ['low_risk_operation'] });
  t.deepEqual(await evaluate({ approvers: ['u1'], columns: 'customer.ssn' }), { decision: 'allow', reasons: ['low_risk_operation'] });

  // someValue over a value that is not a list does not hold; over a list it does as it did.
  t.deepEqual(await evaluate({ approvers: ['u1'], admins: 'u1' }), { decision: 'allow', reasons: ['low_risk_operation'] });
  const admins = await evaluate({ approvers: ['u1'], admins: ['u9', 'u1'] });
  t.is(admins.decision, 'step_up_required');
  t.deepEqual(admins.reasons, ['admin_approver']);
});

test('a rule that still throws while it runs is a deny (policy_error), logged by rule name without what it read, on stdout, once a minute', async (t) => {
  // In a process of its own, whose stdout (where the service logs) is where the line goes.
  const run = await runScript('test/policy/rule-failure.script.ts');
  t.is(run.code, 0, run.stderr);
  const runs = JSON.parse(run.stderr) as { name: string; fired: boolean; decision: string; reason: string }[][];
  t.is(runs.length, 3);
  for (const outcomes of runs) {
    t.deepEqual(outcomes, [
      { name: 'slow-down', fired: true, decision: 'throttle', reason: 'r_slow' },
      { name: 'broken', fired: true, decision: 'deny', reason: 'policy_error' },
      { name: 'quiet', fired: false, decision: 'deny', reason: 'r_quiet' },
    ]);
  }
  const lines = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
  // Three runs within the minute: said once; the same rule a minute later, and another rule: once each.
  t.is(lines.length, 3, run.stdout);
  const msg = 'policy rule failed while it ran; denied (policy_error)';
  t.like(lines[0], { level: 50, service: 'tps', policyId: 'failing', rule: 'broken', msg, err: { name: 'Error' } });
  t.like(lines[1], { level: 50, policyId: 'failing', rule: 'broken', msg });
  t.like(lines[2], { level: 50, policyId: 'failing', rule: 'other', msg });
  t.false(run.stdout.includes('acct-secret-4711'));
  t.false(run.stdout.includes('another rule'), 'the message is never logged');
});
