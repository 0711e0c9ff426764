import path from 'node:path';
import test from 'ava';
import { compileCatalog } from '../../src/policy/catalog.js';
import { compilePolicy } from '../../src/policy/compile.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { runPolicy } from '../../src/policy/run.js';
import { OPERATORS, type PolicySpec } from '../../src/policy/schema.js';
import { tempConfig } from '../helpers/config.js';

// Validation refuses what would otherwise fail or mislead only once requests arrive.

function problemsWith(edit: (cfg: ReturnType<typeof tempConfig>) => void): string[] {
  const cfg = tempConfig({ fixtures: false });
  try {
    edit(cfg);
    return compileCatalog(loadConfigDir(cfg.dir)).problems.map((p) => `${path.relative(cfg.dir, p.file)} ${p.path}: ${p.message}`);
  } finally {
    cfg.cleanup();
  }
}

const withRule = (condition: string) => (cfg: ReturnType<typeof tempConfig>) =>
  cfg.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', `stepUp: { challenge: passkey }\nrules:\n  - name: r\n    when:\n      all:\n        - ${condition}\n    then: { decision: deny, reason: r_deny }`);

test('every operator validation accepts is one the engine runs', async (t) => {
  for (const operator of OPERATORS) {
    // Each with a fact and a value of the shape it takes.
    const fact = operator === 'contains' || operator === 'doesNotContain' ? 'metadata.changedFields' : 'metadata.requestedCount';
    const value = operator === 'in' || operator === 'notIn' ? [1] : operator === 'exists' ? true : 1;
    const spec = { id: 'ops', rules: [{ name: 'r', when: { all: [{ fact, operator, value }] }, then: { decision: 'deny', reason: 'r' } }] } as unknown as PolicySpec;
    await t.notThrowsAsync(runPolicy(compilePolicy(spec, {}), { metadata: { requestedCount: 1, changedFields: ['iban'] } }), operator);
  }
});

test('an operator the engine does not know (missing) is refused at validation', (t) => {
  t.deepEqual(problemsWith(withRule('{ fact: session.humanSignalAgeSeconds, operator: missing, value: true }')), [
    'rules/standard.yaml rules[0].when.all[0].operator: rules[0].when.all[0].operator must be a known operator, optionally with decorators (e.g. not:in, someFact:in)',
  ]);
  t.deepEqual(problemsWith(withRule('{ fact: session.humanSignalAgeSeconds, operator: exists, value: false }')), []);
});

test('thresholds are ordered as they run, with the defaults filled in', (t) => {
  const thresholds = (value: string) => (cfg: ReturnType<typeof tempConfig>) => cfg.replace('rules/standard.yaml', 'thresholds: { medium: 30, high: 60, stepUp: 60, deny: 85 }', `thresholds: ${value}`);
  t.deepEqual(problemsWith(thresholds('{ medium: 70 }')), ['rules/standard.yaml thresholds: thresholds.medium (70) must be below thresholds.high (60, the default)']);
  t.deepEqual(problemsWith(thresholds('{ high: 20 }')), ['rules/standard.yaml thresholds: thresholds.medium (30, the default) must be below thresholds.high (20)']);
  t.deepEqual(problemsWith(thresholds('{ medium: 60, high: 60 }')), ['rules/standard.yaml thresholds: thresholds.medium (60) must be below thresholds.high (60)']);
  t.deepEqual(problemsWith(thresholds('{ medium: 50, stepUp: 70 }')), []);
  // deny outranks step_up_required: a stepUp at or above deny would never be asked.
  const stepUpUnreachable = ['rules/standard.yaml thresholds: thresholds.stepUp must be below thresholds.deny, or the score step-up can never be asked'];
  t.deepEqual(problemsWith(thresholds('{ stepUp: 85, deny: 85 }')), stepUpUnreachable);
  t.deepEqual(problemsWith(thresholds('{ stepUp: 90, deny: 80 }')), stepUpUnreachable);
  t.deepEqual(problemsWith(thresholds('{ stepUp: 84, deny: 85 }')), []);
});

test('a risk signal cannot read velocity.* or risk.*, which are not known while scoring', (t) => {
  const signal = (fact: string) => (cfg: ReturnType<typeof tempConfig>) =>
    cfg.write('rules/signals.yaml', `${cfg.read('rules/signals.yaml')}  echo:\n    fact: ${fact}\n    transform: ramp\n    range: [0, 10]\n    weight: 10\n`);
  const refused = 'rules/signals.yaml signals.echo.fact: fact cannot be read by a signal: velocity.* is counted after scoring and risk.* is the score itself; use them in a policy rule';
  // (A signals file with a problem is not loaded, so policies' weights also name no signal.)
  t.true(problemsWith(signal('velocity.serviceCount')).includes(refused));
  t.true(problemsWith(signal('risk.score')).includes(refused));
  t.deepEqual(problemsWith(signal('metadata.velocityWindowCount')), []);
  // Rules may still read both.
  t.deepEqual(problemsWith(withRule('{ fact: velocity.serviceCount, operator: greaterThan, value: 5 }')), []);
  t.deepEqual(problemsWith(withRule('{ fact: risk.base, operator: greaterThanInclusive, value: 50 }')), []);
});

test("an operation's environments are names an environment can have: one that no key could belong to is refused", (t) => {
  const scoped = (names: string) => (cfg: ReturnType<typeof tempConfig>) => cfg.replace('operations/customer.create.yaml', 'policy: standard', `policy: standard\nenvironments: ${names}`);
  t.deepEqual(problemsWith(scoped('[production, staging-eu, dev_2]')), []);
  t.deepEqual(problemsWith(scoped('[production, "prod env"]')), ['operations/customer.create.yaml environments[1]: environments[1] must be an environment name (1–64 letters, digits, - and _)']);
});
