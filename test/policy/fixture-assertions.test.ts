import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { paymentsFixtures } from '../helpers/fixtureYaml.js';

// What a fixture asserts, through `tps test` as CI runs it: every step asserts its decision, only
// asserted decisions count as reached, and a reason code or a redacted field is taken at its word
// only when it can mean something (a known code; each field once).


function config(t: { teardown(fn: () => void): void }, files: Record<string, string>): TempConfig {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  for (const [rel, text] of Object.entries(files)) cfg.write(rel, text);
  return cfg;
}

/** The problem lines of a `tps test` report, relative to the config folder. */
const problemLines = (stdout: string, cfg: TempConfig) =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith(`  ${cfg.dir}/`))
    .map((l) => l.replace(`  ${cfg.dir}/`, ''));

test('a step that asserts no decision is a located problem, and tps test exits 1 rather than passing it', async (t) => {
  const cfg = config(t, {
    'rules/payments.fixtures.yaml': paymentsFixtures(`  - name: no expect
    base: finance
  - name: empty expect
    base: finance
    expect: {}
  - name: band only
    base: finance
    expect: { band: low }
  - name: a step without expect
    steps:
      - base: finance
        expect: { decision: allow }
      - base: finance
        request: { requestData: { amount: 15000 } }
`),
  });
  const r = await runTps(['test', cfg.dir]);
  t.is(r.code, 1, r.stdout);
  const why = 'is required: every step asserts the decision it must reach, or it would pass whatever was decided';
  t.deepEqual(problemLines(r.stdout, cfg), [
    `rules/payments.fixtures.yaml:9 at cases[0].expect: cases[0].expect ${why}`,
    `rules/payments.fixtures.yaml:13 at cases[1].expect.decision: cases[1].expect.decision ${why}`,
    `rules/payments.fixtures.yaml:16 at cases[2].expect.decision: cases[2].expect.decision ${why}`,
    `rules/payments.fixtures.yaml:21 at cases[3].steps[1].expect: cases[3].steps[1].expect ${why}`,
  ]);
  t.true(r.stdout.startsWith('4 problems in the configuration or fixtures:\n'), r.stdout);
});

test('only decisions a step asserted and reached count as reached: not a failed assertion, not an unasserted would-be decision', async (t) => {
  const cfg = config(t, {
    // A failing case: it asserted deny and got allow, so neither was shown to be reached.
    'rules/payments.fixtures.yaml': paymentsFixtures(`  - name: wrongly expects deny
    base: finance
    expect: { decision: deny }
`),
    // Monitor mode: the answer is allow; the would-be deny is reached only if a step asserts it.
    'rules/pii-read.fixtures.yaml': `operation: customer.read_pii
cases:
  - name: finance reads PII, and monitor mode answers allow
    request:
      actor: { id: fin-1, authenticated: true, roles: [finance] }
      resource: { type: customer, id: cus-1, classification: PII }
      session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
    expect: { decision: allow }
`,
  });
  cfg.write('rules/pii-read.yaml', `${cfg.read('rules/pii-read.yaml')}mode: monitor\n`);
  const r = await runTps(['test', cfg.dir]);
  t.is(r.code, 1, r.stdout);
  const coverage = r.stdout.split('decisions reached, per policy:\n')[1]!.split('\n\n')[0]!.split('\n');
  t.deepEqual(coverage, [
    '  payments                    not reached: allow, deny, throttle, step_up_required',
    '  pii-read                 allow   not reached: deny, step_up_required, allow_redacted',
  ]);
  t.true(r.stdout.trimEnd().endsWith('1 passed, 1 failed'), r.stdout);
});

test('a reason code no decision can carry is a located problem with a suggestion; a code a policy rule emits is fine', async (t) => {
  const cfg = config(t, {
    'rules/payments.fixtures.yaml': paymentsFixtures(`  - name: a typo in excludes always held
    base: finance
    expect: { decision: allow, reasons: { excludes: [large_payment_ammount] } }
  - name: a typo in includes and in a list
    steps:
      - base: finance
        expect: { decision: allow, reasons: { includes: [high_sensitivity_operaton] } }
      - base: finance
        expect: { decision: allow, reasons: [high_sensitivity_operation, zzz_unheard_of_code] }
  - name: a typo in the would-be reasons
    base: finance
    expect: { decision: allow, monitor: { decision: allow, reasons: [policy_role_requried] } }
  - name: the policy's own code
    base: finance
    expect: { decision: allow, reasons: { excludes: [large_payment_in_eur] } }
`),
  });
  cfg.replace('rules/payments.yaml', 'reason: large_payment_amount', 'reason: large_payment_in_eur');
  const r = await runTps(['test', cfg.dir]);
  t.is(r.code, 1, r.stdout);
  const unknown = (code: string) => `unknown reason code "${code}": it is not in the reason catalogue, and no rule or signal of the policies emits it`;
  t.deepEqual(problemLines(r.stdout, cfg), [
    `rules/payments.fixtures.yaml:11 at cases[0].expect.reasons.excludes[0]: ${unknown('large_payment_ammount')} (did you mean "large_payment_amount"?)`,
    `rules/payments.fixtures.yaml:15 at cases[1].steps[0].expect.reasons.includes[0]: ${unknown('high_sensitivity_operaton')} (did you mean "high_sensitivity_operation"?)`,
    `rules/payments.fixtures.yaml:17 at cases[1].steps[1].expect.reasons[1]: ${unknown('zzz_unheard_of_code')}`,
    `rules/payments.fixtures.yaml:20 at cases[2].expect.monitor.reasons[0]: ${unknown('policy_role_requried')} (did you mean "policy_role_required"?)`,
  ]);
  // The case naming the policy's own code was not refused: it ran and passed.
  t.true(r.stdout.includes("  ✓ the policy's own code\n"), r.stdout);
});

test('redaction fields compare as sets: a field named twice is refused, another order passes, another set fails', async (t) => {
  const head = `operation: invoice.export
bases:
  bulk:
    actor: { id: fin-1, authenticated: true, roles: [finance] }
    resource: { type: invoice, id: batch-1 }
    session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
    requestData: { requestedCount: 5000 }
cases:
`;
  const fixture = (fields: string) => `${head}  - name: masked fields
    base: bulk
    expect:
      decision: allow_redacted
      redaction: { fields: [${fields}], strategy: mask }
`;
  // The policy masks customer.email, customer.phone and customer.taxId.
  const cfg = config(t, { 'rules/finance-export.fixtures.yaml': fixture('customer.email, customer.email, customer.phone') });
  const twice = await runTps(['test', cfg.dir]);
  t.is(twice.code, 1, twice.stdout);
  t.deepEqual(problemLines(twice.stdout, cfg), [
    'rules/finance-export.fixtures.yaml:13 at cases[0].expect.redaction.fields[1]: cases[0].expect.redaction.fields names "customer.email" twice',
  ]);

  cfg.write('rules/finance-export.fixtures.yaml', fixture('customer.taxId, customer.email, customer.phone'));
  const reordered = await runTps(['test', cfg.dir]);
  t.is(reordered.code, 0, reordered.stdout);
  t.true(reordered.stdout.includes('  ✓ masked fields\n'), reordered.stdout);

  cfg.write('rules/finance-export.fixtures.yaml', fixture('customer.email, customer.phone, customer.address'));
  const other = await runTps(['test', cfg.dir]);
  t.is(other.code, 1, other.stdout);
  t.true(other.stdout.includes('✗ redaction: expected [customer.email, customer.phone, customer.address] (mask), got [customer.email, customer.phone, customer.taxId] (mask)'), other.stdout);
});
