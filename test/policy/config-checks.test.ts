import path from 'node:path';
import test from 'ava';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { prepareFixtures } from '../../src/fixtures/suite.js';
import { compileCatalog, loadCatalog } from '../../src/policy/catalog.js';
import { compilePolicy } from '../../src/policy/compile.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { runPolicy } from '../../src/policy/run.js';
import { OPERATORS, policySchema, type PolicySpec } from '../../src/policy/schema.js';
import { check } from '../../src/validate/kit.js';
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
/** Then gives the policy a service window, so that TPS counts velocity.serviceCount for it. */
const withWindow = (edit: (cfg: ReturnType<typeof tempConfig>) => void) => (cfg: ReturnType<typeof tempConfig>) => {
  edit(cfg);
  cfg.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', 'stepUp: { challenge: passkey }\nthrottle: { serviceWindow: { seconds: 60, max: 30 } }');
};

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
  // Rules may still read both (velocity.* in a policy that counts it: see the velocity test below).
  t.deepEqual(problemsWith(withWindow(withRule('{ fact: velocity.serviceCount, operator: greaterThan, value: 5 }'))), []);
  t.deepEqual(problemsWith(withRule('{ fact: risk.base, operator: greaterThanInclusive, value: 50 }')), []);
});

test("an operation's environments are names an environment can have: one that no key could belong to is refused", (t) => {
  const scoped = (names: string) => (cfg: ReturnType<typeof tempConfig>) => cfg.replace('operations/customer.create.yaml', 'policy: standard', `policy: standard\nenvironments: ${names}`);
  t.deepEqual(problemsWith(scoped('[production, staging-eu, dev_2]')), []);
  t.deepEqual(problemsWith(scoped('[production, "prod env"]')), ['operations/customer.create.yaml environments[1]: environments[1] must be an environment name (1–64 letters, digits, - and _)']);
});

// ---------------------------------------------------------------- condition values

const LIST = 'a non-empty list of strings, numbers or booleans';

test("a condition's value must have the shape its operator takes, decorators stripped", (t) => {
  const refused = (condition: string, message: string) => t.deepEqual(problemsWith(withRule(condition)), [`rules/standard.yaml rules[0].when.all[0].value: rules[0].when.all[0].value ${message}`], condition);
  // json-rules-engine's `in` is value.indexOf(fact): a number throws on every run, a string matches substrings.
  refused('{ fact: metadata.localHour, operator: in, value: 3 }', `must be ${LIST} for operator in`);
  refused('{ fact: metadata.localHour, operator: notIn, value: "0123" }', `must be ${LIST} for operator notIn`);
  refused('{ fact: actor.roles, operator: "not:someFact:in", value: admin }', `must be ${LIST} for operator not:someFact:in`);
  refused('{ fact: session.geoChanged, operator: exists, value: "yes" }', 'must be true or false for operator exists');
  refused('{ fact: session.geoChanged, operator: "not:exists", value: 1 }', 'must be true or false for operator not:exists');
  refused('{ fact: session.geoChanged, operator: exists, value: { fact: session.networkChanged } }', 'must be true or false for operator exists');
  refused('{ fact: metadata.requestedCount, operator: greaterThan, value: "100" }', 'must be a number for operator greaterThan');
  refused('{ fact: metadata.localHour, operator: "someValue:lessThan", value: 3 }', 'must be a non-empty list of numbers for operator someValue:lessThan');
  refused('{ fact: actor.roles, operator: contains, value: [admin] }', 'must be a string, number or boolean for operator contains');
  refused('{ fact: actor.id, operator: equal, value: [a, b] }', 'must be a string, number or boolean for operator equal');
  // After swap: the value stands where the fact would: contains looks inside it.
  refused('{ fact: actor.id, operator: "swap:contains", value: admin }', `must be ${LIST} for operator swap:contains`);

  for (const accepted of [
    '{ fact: metadata.localHour, operator: in, value: [0, 1, 2] }',
    '{ fact: actor.roles, operator: "not:someFact:in", value: [admin] }',
    '{ fact: session.geoChanged, operator: exists, value: false }',
    '{ fact: metadata.requestedCount, operator: greaterThan, value: { fact: metadata.resourceCount } }',
    '{ fact: metadata.localHour, operator: "everyValue:lessThan", value: [5, 10] }',
    '{ fact: metadata.localHour, operator: "someValue:in", value: [[1, 2], [3]] }',
    '{ fact: actor.roles, operator: doesNotContain, value: admin }',
    '{ fact: actor.id, operator: "swap:contains", value: [a, b] }',
  ]) {
    t.deepEqual(problemsWith(withRule(accepted)), [], accepted);
  }
});

test('a value refused for its operator is located at its line', (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  withRule('{ fact: metadata.localHour, operator: in, value: 3 }')(cfg);
  const [problem] = compileCatalog(loadConfigDir(cfg.dir)).problems;
  t.like(problem, { path: 'rules[0].when.all[0].value', line: 9 });
});

test('whatever value validation accepts for an operator, the engine runs it without throwing, fact references and swap included', async (t) => {
  // A reference reads what the request sent, or nothing: absent, a string, a number, a list.
  const references = ['requestData.absent', 'actor.id', 'metadata.requestedCount', 'actor.roles'].map((fact) => ({ fact }));
  const values: unknown[] = [3, 'a', true, [1], ['a'], [[1]], ...references];
  const facts = { metadata: { requestedCount: 1, resourceCount: 2, changedFields: ['iban'] }, actor: { id: 'a', roles: ['admin'] }, requestData: {} };
  const decorators = ['', 'not:', 'someFact:', 'everyFact:', 'someValue:', 'everyValue:', 'swap:', 'not:swap:', 'swap:someFact:', 'swap:someValue:', 'swap:everyValue:'];
  let accepted = 0;
  for (const base of OPERATORS) {
    for (const decorator of decorators) {
      for (const fact of ['metadata.requestedCount', 'actor.roles', 'actor.id', 'requestData.absent']) {
        for (const value of values) {
          const spec = { id: 'ops', rules: [{ name: 'r', when: { all: [{ fact, operator: decorator + base, value }] }, then: { decision: 'deny', reason: 'r_deny' } }] };
          if (!check(policySchema, spec).ok) continue;
          accepted++;
          const run = await runPolicy(compilePolicy(spec as PolicySpec, {}), facts);
          // Not even by the fallback that denies a rule that threw (policy_error).
          t.not(run.outcomes[0]!.reason, 'policy_error', `${fact} ${decorator}${base} ${JSON.stringify(value)}`);
        }
      }
    }
  }
  t.true(accepted > 300, String(accepted));
});

// ---------------------------------------------------------------- fact paths

test('a fact path under a root whose facts TPS builds must name one of them, with the nearest suggested', (t) => {
  const refused = (fact: string, message: string) =>
    t.deepEqual(problemsWith(withRule(`{ fact: ${fact}, operator: exists, value: false }`)), [`rules/standard.yaml rules[0].when.all[0].fact: rules[0].when.all[0].fact ${message}`], fact);
  refused('session.recentHumanSignalAgeSeconds', 'names no fact "session.recentHumanSignalAgeSeconds" (did you mean "session.humanSignalAgeSeconds"?)');
  refused('actor.role', 'names no fact "actor.role" (did you mean "actor.roles"?)');
  refused('metadata.requestCount', 'names no fact "metadata.requestCount" (did you mean "metadata.requestedCount"?)');
  refused('risk.scor', 'names no fact "risk.scor" (did you mean "risk.score"?)');
  refused('metadata.notes', 'names no fact "metadata.notes"; the facts under metadata are: requestedCount, velocityWindowCount, changedFields, resourceCount, abnormalSequence, objectAccessRare, suspiciousTimeWindow, localHour, hasProofToken');
  refused('operation', 'names no fact "operation"; the facts under operation are: key, actionType, resourceType, sensitivity');
  refused('requestdata.amount', 'must be a dotted path whose first part is one of: operation, actor, resource, session, metadata, velocity, risk, requestData, rawSignals');

  // The caller names the keys of requestData and rawSignals.
  for (const fact of ['requestData.amount', 'requestData.customer.tier', 'rawSignals.botScore', 'risk.band', 'resource.ownedByActor']) {
    t.deepEqual(problemsWith(withRule(`{ fact: ${fact}, operator: exists, value: true }`)), [], fact);
  }
});

test('a value that reads a fact names a known one, and the rule compares with it when it runs', async (t) => {
  const reference = (fact: string) => `{ fact: metadata.requestedCount, operator: greaterThan, value: { ${fact} } }`;
  t.deepEqual(problemsWith(withRule(reference('fact: metadata.resourceCont'))), [
    'rules/standard.yaml rules[0].when.all[0].value.fact: rules[0].when.all[0].value.fact names no fact "metadata.resourceCont" (did you mean "metadata.resourceCount"?)',
  ]);
  t.deepEqual(problemsWith(withRule(reference('fatc: metadata.resourceCount'))), [
    'rules/standard.yaml rules[0].when.all[0].value.fact: rules[0].when.all[0].value.fact is required',
    'rules/standard.yaml rules[0].when.all[0].value.fatc: rules[0].when.all[0].value.fatc is not a known field (did you mean "fact"?)',
  ]);

  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  withRule(reference('fact: metadata.resourceCount'))(cfg);
  const offline = new OfflineEvaluator({ catalog: loadCatalog(cfg.dir) });
  const request = (requestedCount: number) => ({
    operationKey: 'customer.create',
    actor: { id: 'u1', authenticated: true },
    resource: { type: 'customer', id: 'c1' },
    session: { continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
    metadata: { requestedCount, resourceCount: 5 },
  });
  t.is((await offline.evaluate(request(6))).response.decision, 'deny');
  t.is((await offline.evaluate(request(5))).response.decision, 'allow');
});

test('a risk signal reads a known fact too', (t) => {
  const problems = problemsWith((cfg) => cfg.replace('rules/signals.yaml', 'fact: session.humanSignalAgeSeconds', 'fact: session.humanSignalAge'));
  t.true(problems.includes('rules/signals.yaml signals.missing_recent_human_signal.fact: fact names no fact "session.humanSignalAge" (did you mean "session.humanSignalAgeSeconds"?)'), problems.join('\n'));
});

// ---------------------------------------------------------------- empty files

test('an empty or comment-only file is a problem, not a file that declares nothing', (t) => {
  const empty = (file: string, text: string) => problemsWith((cfg) => cfg.write(file, text));
  // (A signals file with a problem is not loaded, so a policy's weights also name no signal.)
  t.deepEqual(empty('rules/signals.yaml', '# the signals, to come\n')[0], 'rules/signals.yaml : the file is empty');
  t.deepEqual(empty('operations/customer.create.yaml', ''), ['operations/customer.create.yaml : the file is empty']);
  t.deepEqual(empty('rules/extra.yaml', '---\n# nothing yet\n'), ['rules/extra.yaml : the file is empty']);
  t.deepEqual(empty('rules/extra.yaml', '~\n'), ['rules/extra.yaml : the file is empty']);
  t.deepEqual(empty('rules/extra.yaml', '- id: extra\n'), ['rules/extra.yaml : the file must be a mapping of fields (key: value), not a list']);

  const cfg = tempConfig();
  t.teardown(cfg.cleanup);
  cfg.write('rules/standard.fixtures.yaml', '# cases to come\n');
  t.deepEqual(prepareFixtures(cfg.dir).problems.map((p) => `${path.relative(cfg.dir, p.file)}:${p.line} ${p.message}`), ['rules/standard.fixtures.yaml:1 the file is empty']);
});

// ---------------------------------------------------------------- then

test("a rule's then field that its decision does not use is refused, and a rule cannot decide allow", (t) => {
  const withThen = (then: string) => (cfg: ReturnType<typeof tempConfig>) =>
    cfg.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', `stepUp: { challenge: passkey }\nrules:\n  - name: r\n    then: ${then}`);
  const at = (field: string, message: string) => [`rules/standard.yaml rules[0].then.${field}: rules[0].then.${field} ${message}`];
  t.deepEqual(problemsWith(withThen('{ decision: deny, reason: r_deny, redaction: { fields: [customer.email], strategy: mask } }')), at('redaction', 'is only for decision allow_redacted; this rule decides deny'));
  t.deepEqual(problemsWith(withThen('{ decision: throttle, reason: r_slow, challenge: proof_token }')), at('challenge', 'is only for decision step_up_required; this rule decides throttle'));
  t.deepEqual(problemsWith(withThen('{ decision: step_up_required, reason: r_step, retryAfterSeconds: 30 }')), at('retryAfterSeconds', 'is only for decision throttle; this rule decides step_up_required'));
  t.deepEqual(problemsWith(withThen('{ decision: allow, reason: r_ok }')), at('decision', 'cannot be allow: every other decision outranks it, so it would override nothing; a rule decides allow_redacted, step_up_required, throttle or deny'));

  for (const then of [
    '{ decision: allow_redacted, reason: r_mask, redaction: { fields: [customer.email], strategy: mask } }',
    '{ decision: step_up_required, reason: r_step, challenge: proof_token }',
    '{ decision: throttle, reason: r_slow, retryAfterSeconds: 30 }',
  ]) {
    t.deepEqual(problemsWith(withThen(then)), [], then);
  }
});
