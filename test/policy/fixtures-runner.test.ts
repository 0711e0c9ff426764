import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { runFixtures } from '../../src/fixtures/suite.js';
import { describeFailure, junitReport } from '../../src/fixtures/report.js';
import { runCli } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';
import { paymentsFixtures } from '../helpers/fixtureYaml.js';

// The fixture runner itself: a case that must fail is reported as failing, with expected and actual
// decision, reasons, score and the rules that fired; broken fixture files are located problems.

const MUST_FAIL = paymentsFixtures(`  - name: passes
    base: finance
    expect: { decision: step_up_required, challenge: proof_token }
  - name: must fail
    base: finance
    expect:
      decision: allow
      reasons: [high_sensitivity_operation]
      score: { min: 50, max: 60 }
      challenge: passkey
`, 15000);

function configWithFailingFixture() {
  const cfg = tempConfig({ fixtures: false });
  cfg.write('rules/payments.fixtures.yaml', MUST_FAIL);
  return cfg;
}

test('a failing case is reported with expected against actual decision, reasons, score and fired rules', async (t) => {
  const cfg = configWithFailingFixture();
  t.teardown(cfg.cleanup);
  const run = await runFixtures(cfg.dir);
  t.deepEqual(run.problems, []);
  t.deepEqual(
    run.results.map((r) => [r.name, r.ok]),
    [
      ['passes', true],
      ['must fail', false],
    ],
  );
  const failed = run.results[1]!;
  t.is(
    describeFailure(failed),
    [
      '  decision  expected allow, got step_up_required',
      '  reasons   expected [high_sensitivity_operation], got [high_sensitivity_operation, large_payment_amount]',
      '  score     expected 50..60, got 11.25 (low)',
      '  fired     step-up-large-payment',
      '  ✗ decision: expected allow, got step_up_required',
      '  ✗ reasons: expected exactly [high_sensitivity_operation], got [high_sensitivity_operation, large_payment_amount]',
      '  ✗ score: expected 50..60, got 11.25',
      '  ✗ challenge: expected passkey, got proof_token',
    ].join('\n'),
  );
  t.deepEqual(run.coverage, [{ file: cfg.path('rules/payments.fixtures.yaml'), policyId: 'payments', covered: ['step_up_required'], missing: ['allow', 'deny', 'throttle'] }]);

  const xml = junitReport(run);
  t.true(xml.includes('<testsuites name="tps fixtures" tests="2" failures="1" errors="0"'), xml);
  t.true(xml.includes('<testcase classname="' + cfg.path('rules/payments.fixtures.yaml') + '" name="must fail"'));
  t.true(xml.includes('<failure message="decision: expected allow, got step_up_required">'));
});

test.serial('tps test prints the report, writes JUnit XML and exits 1 on a failing case', async (t) => {
  const cfg = configWithFailingFixture();
  t.teardown(cfg.cleanup);
  const reports = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-junit-'));
  t.teardown(() => fs.rmSync(reports, { recursive: true, force: true }));
  const junit = path.join(reports, 'fixtures.xml');
  const { code, stdout } = await runCli(['test', cfg.dir, '--junit', junit]);
  t.is(code, 1);
  t.true(stdout.includes('  ✓ passes\n  ✗ must fail\n      decision  expected allow, got step_up_required\n'), stdout);
  t.true(stdout.includes('  payments                 step_up_required   not reached: allow, deny, throttle'));
  t.true(stdout.trimEnd().endsWith('1 passed, 1 failed'));
  t.true(fs.readFileSync(junit, 'utf8').includes('failures="1"'));

  const all = await runCli(['test']);
  t.is(all.code, 0, all.stdout);
  t.regex(all.stdout, /\n\d+ passed, 0 failed\n$/);
});

test.serial('tps test that runs no case fails: a --match that selects none, a directory without fixtures', async (t) => {
  const matched = await runCli(['test', '--match', 'step-up']);
  t.is(matched.code, 0, matched.stdout);
  t.regex(matched.stdout, /\n[1-9]\d* passed, 0 failed\n$/);

  const misspelt = await runCli(['test', '--match', 'no case is named this']);
  t.is(misspelt.code, 1, misspelt.stdout);
  t.true(misspelt.stdout.trimEnd().endsWith('0 passed, 0 failed'));
  t.is(misspelt.stderr, 'no fixture case matches --match "no case is named this"\n');

  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  const none = await runCli(['test', cfg.dir]);
  t.is(none.code, 1, none.stdout);
  t.is(none.stderr, 'no fixture case found (rules/*.fixtures.yaml)\n');
});

test('a broken fixture file is a located problem, not a silent pass', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write(
    'rules/standard.fixtures.yaml',
    [
      'cases:',
      '  - name: typo',
      '    request: { actor: { id: a }, resource: { type: customer, id: c } }',
      '    expect: { decison: allow }',
      '  - name: bad request',
      '    base: nope',
      '    expect: { decision: allow }',
      '  - name: invalid request',
      '    request: { actor: { id: a }, resource: { type: customer, id: c }, session: { continuityStrength: 3 } }',
      '    expect: { decision: allow }',
      '',
    ].join('\n'),
  );
  cfg.write('rules/orphan.fixtures.yaml', 'cases: []\n');
  cfg.write('rules/finance-export.fixtures.yaml', 'operation: customer.create\ncases:\n  - name: wrong operation\n    request: { actor: { id: a }, resource: { type: c, id: c } }\n    expect: { decision: allow }\n');
  const run = await runFixtures(cfg.dir);
  t.deepEqual(
    run.problems.map((p) => `${path.relative(cfg.dir, p.file)}:${p.line} ${p.path}: ${p.message}`),
    [
      'rules/finance-export.fixtures.yaml:1 operation: operation "customer.create" is bound to policy "standard", not "finance-export" which this file tests',
      'rules/orphan.fixtures.yaml:1 : no policy file orphan.yaml beside it: a fixture file is named after the policy file it tests',
      // The misspelt decision is also a missing one.
      'rules/standard.fixtures.yaml:4 cases[0].expect.decision: cases[0].expect.decision is required: every step asserts the decision it must reach, or it would pass whatever was decided',
      'rules/standard.fixtures.yaml:4 cases[0].expect.decison: cases[0].expect.decison is not a known field (did you mean "decision"?)',
    ],
  );
  cfg.write('rules/standard.fixtures.yaml', cfg.read('rules/standard.fixtures.yaml').replace('decison', 'decision'));
  cfg.remove('rules/orphan.fixtures.yaml');
  cfg.remove('rules/finance-export.fixtures.yaml');
  const again = await runFixtures(cfg.dir);
  t.deepEqual(
    again.problems.map((p) => `${path.relative(cfg.dir, p.file)}:${p.line} ${p.path}: ${p.message}`),
    [
      'rules/standard.fixtures.yaml:6 cases[1].base: base "nope" is not defined under bases',
      'rules/standard.fixtures.yaml:9 cases[2].request: the request is not a valid evaluate request: session.continuityStrength must be at most 1',
    ],
  );
  t.deepEqual(again.results.map((r) => [r.name, r.ok]), [['typo', true]]);
});
