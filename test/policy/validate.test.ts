import path from 'node:path';
import test from 'ava';
import { compileCatalog } from '../../src/policy/catalog.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { runCli } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';

// `tps validate` loads exactly as the server does; each kind of mistake gives a located, plain problem.

function brokenConfig() {
  const cfg = tempConfig({ fixtures: false });
  cfg.write(
    'operations/vendor.update.yaml',
    ['key: vendor.update', 'displayName: Update vendor', 'actionType: update', 'resourceType: vendor', 'sensitivity: hgih', 'policy: vendor-policy', 'descripton: typo here', ''].join('\n'),
  );
  cfg.write('operations/customer.create.copy.yaml', cfg.read('operations/customer.create.yaml').replace('displayName: Create customer', 'displayName: Create customer again'));
  cfg.write(
    'rules/broken.yaml',
    [
      'id: broken',
      'thresholds: { medium: 30, high: 160, stepUp: "sixty" }',
      'requireRoles: []',
      'rules:',
      '  - name: redact-nothing',
      '    when:',
      '      all:',
      '        - { fact: actor.id, operator: equal, value: x }',
      '    then:',
      '      decison: allow_redacted',
      '      reason: policy_redaction_applied',
      '      redaction:',
      '        fields: []',
      '        strategy: mask',
      '  - name: redact-nothing',
      '    then: { decision: deny, reason: nope }',
      '',
    ].join('\n'),
  );
  cfg.write('rules/syntax.yaml', 'id: syntax\nthresholds: { medium: 30\n');
  return cfg;
}

const located = (dir: string) => (p: { file: string; line?: number; path: string; message: string }) => `${path.relative(dir, p.file)}:${p.line} ${p.path || '-'}: ${p.message}`;

test('every kind of mistake is reported with its file, line, YAML path and a plain message', (t) => {
  const cfg = brokenConfig();
  t.teardown(cfg.cleanup);
  const { catalog, problems } = compileCatalog(loadConfigDir(cfg.dir));
  t.is(catalog, undefined);
  t.deepEqual(problems.map(located(cfg.dir)), [
    'operations/vendor.update.yaml:5 sensitivity: sensitivity must be one of: low, medium, high, critical',
    'operations/vendor.update.yaml:6 policy: policy "vendor-policy" is not defined under rules/',
    'operations/vendor.update.yaml:7 descripton: descripton is not a known field (did you mean "description"?)',
    'rules/broken.yaml:2 thresholds.high: thresholds.high must be between 0 and 100',
    'rules/broken.yaml:2 thresholds.stepUp: thresholds.stepUp must be a number',
    'rules/broken.yaml:3 requireRoles: requireRoles must name at least one role',
    'rules/broken.yaml:9 rules[0].then.decision: rules[0].then.decision is required',
    'rules/broken.yaml:10 rules[0].then.decison: rules[0].then.decison is not a known field (did you mean "decision"?)',
    'rules/broken.yaml:13 rules[0].then.redaction.fields: rules[0].then.redaction.fields must name at least one field to redact',
    'rules/syntax.yaml:3 -: unexpected end of the stream within a flow collection',
    'operations/customer.create.yaml:1 key: operation key "customer.create" is already defined in ' + path.join(cfg.dir, 'operations/customer.create.copy.yaml'),
  ]);
});

test('cross-file checks: a rule name used twice and a weight for an undeclared signal', (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', 'stepUp: { challenge: passkey }\nweights:\n  weak_sesion_continuity: 10\nrules:\n  - name: a\n    then: { decision: deny, reason: r_one }\n  - name: a\n    then: { decision: deny, reason: r_two }');
  const { problems } = compileCatalog(loadConfigDir(cfg.dir));
  t.deepEqual(problems.map(located(cfg.dir)), [
    'rules/standard.yaml:6 weights.weak_sesion_continuity: weights.weak_sesion_continuity names no signal declared in rules/signals.yaml',
    'rules/standard.yaml:10 rules[1].name: rule name "a" is used twice in this policy',
  ]);
});

test.serial('tps validate prints every problem and exits non-zero; a good tree exits 0 with its versions', async (t) => {
  const cfg = brokenConfig();
  t.teardown(cfg.cleanup);
  const bad = await runCli(['validate', cfg.dir]);
  t.is(bad.code, 1);
  const lines = bad.stderr.trim().split('\n');
  t.is(lines[0], '11 problems:');
  t.true(lines.includes(`  ${cfg.path('rules/broken.yaml')}:10 at rules[0].then.decison: rules[0].then.decison is not a known field (did you mean "decision"?)`), bad.stderr);
  t.true(lines.includes(`  ${cfg.path('operations/vendor.update.yaml')}:6 at policy: policy "vendor-policy" is not defined under rules/`));

  const json = await runCli(['validate', cfg.dir, '--json']);
  t.is(json.code, 1);
  t.is(JSON.parse(json.stdout).problems.length, 11);

  const good = tempConfig();
  t.teardown(good.cleanup);
  const ok = await runCli(['validate', good.dir]);
  t.is(ok.code, 0, ok.stderr);
  t.regex(ok.stdout, /^ok: 5 operations, 5 policies; configuration version [0-9a-f]{16}\n/);
  t.regex(ok.stdout, /\n {2}payments {17}pv_[0-9a-f]{20}\n/);
});

test.serial('tps compile prints the json-rules-engine rules and the policyVersionId of one operation', async (t) => {
  const { code, stdout } = await runCli(['compile', '--operation', 'payment_transaction.create']);
  t.is(code, 0);
  const doc = JSON.parse(stdout);
  t.deepEqual(doc.operations, [{ key: 'payment_transaction.create', policyId: 'payments', mode: 'enforce', sensitivity: 'critical', actionType: 'create' }]);
  t.is(doc.policies.length, 1);
  const [p] = doc.policies;
  t.regex(p.policyVersionId, /^pv_[0-9a-f]{20}$/);
  t.deepEqual(
    p.compiled.rules.map((r: { name: string }) => r.name),
    ['require-roles', 'caller-velocity-limit', 'service-velocity-limit', 'score-deny', 'score-step-up', 'step-up-large-payment'],
  );
  const large = p.compiled.rules.find((r: { name: string }) => r.name === 'step-up-large-payment');
  t.deepEqual(large.conditions, { all: [{ fact: 'requestData', path: 'amount', operator: 'greaterThanInclusive', value: 10000 }] });
  t.is(large.event.type, 'step_up_required');

  const unknown = await runCli(['compile', '--operation', 'nope.nope']);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /operation "nope.nope" is not defined/);
});
