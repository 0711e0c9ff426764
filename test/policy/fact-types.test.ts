// Validation refuses a condition that can never match a fact whose type TPS knows (src/facts/paths.ts):
// such a deny rule passed validation and then silently never fired, or fired for everyone.
import test from 'ava';
import { compileCatalog } from '../../src/policy/catalog.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { runTps } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';

/** A policy file, one rule a condition, each condition on a line of its own (line 5 + 3 × its index). */
const policy = (conditions: string[], extra = '') =>
  [
    'id: typed',
    extra,
    'rules:',
    ...conditions.flatMap((c, i) => [`  - name: r${i}`, `    when: ${c}`, `    then: { decision: deny, reason: r_deny }`]),
    '',
  ].join('\n');

test('tps validate refuses, at their lines and with what to write instead, conditions that could never match their fact', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write(
    'rules/typed.yaml',
    policy([
      '{ fact: actor.roles, operator: in, value: [contractor] }',
      '{ fact: actor.roles, operator: notIn, value: [contractor] }',
      '{ fact: resource.classification, operator: equal, value: PII }',
      '{ fact: velocity.serviceCount, operator: greaterThan, value: 5 }',
      '{ fact: metadata.changedFields, operator: exists, value: false }',
    ]),
  );
  const res = await runTps(['validate', cfg.dir]);
  t.is(res.code, 1, res.stdout + res.stderr);
  const file = cfg.path('rules/typed.yaml');
  t.deepEqual(res.stderr.trim().split('\n'), [
    '5 problems:',
    `  ${file}:5 at rules[0].when.operator: rules[0].when.operator in compares actor.roles, a list, as a whole: it never holds; to test its items use contains (one value) or someFact:in (any of several)`,
    `  ${file}:8 at rules[1].when.operator: rules[1].when.operator notIn compares actor.roles, a list, as a whole: it always holds; to test its items use doesNotContain (one value) or not:someFact:in (none of several)`,
    `  ${file}:11 at rules[2].when.value: rules[2].when.value can never match: resource.classification is always lower-case, never "PII"; write "pii"`,
    `  ${file}:14 at rules[3].when.fact: rules[3].when.fact reads velocity.serviceCount, which TPS counts only for a policy with throttle.serviceWindow: here it is always absent; add throttle.serviceWindow`,
    `  ${file}:17 at rules[4].when.value: rules[4].when.value exists: false never holds: metadata.changedFields is on every request (an empty list when none were sent); drop the condition`,
  ]);

  // As suggested, each is a tree the server starts with.
  cfg.write(
    'rules/typed.yaml',
    policy(
      [
        '{ fact: actor.roles, operator: "someFact:in", value: [contractor] }',
        '{ fact: actor.roles, operator: "not:someFact:in", value: [contractor] }',
        '{ fact: resource.classification, operator: equal, value: pii }',
        '{ fact: velocity.serviceCount, operator: greaterThan, value: 5 }',
        '{ fact: metadata.changedFields, operator: contains, value: iban }',
      ],
      'throttle: { serviceWindow: { seconds: 60, max: 30 } }',
    ),
  );
  const ok = await runTps(['validate', cfg.dir]);
  t.is(ok.code, 0, ok.stderr);
});

test('every comparison is held to its fact type, through not:, swap: and the item decorators', (t) => {
  const problems = (condition: string) => {
    const cfg = tempConfig({ fixtures: false });
    try {
      cfg.write('rules/typed.yaml', policy([condition]));
      return compileCatalog(loadConfigDir(cfg.dir)).problems.map((p) => `${p.path}: ${p.message.slice(p.path.length + 1)}`);
    } finally {
      cfg.cleanup();
    }
  };
  const refused: [string, string][] = [
    ['{ fact: actor.roles, operator: equal, value: admin }', 'rules[0].when.operator: equal compares actor.roles, a list, as a whole: it never holds; to test its items use contains (one value) or someFact:in (any of several)'],
    ['{ fact: actor.roles, operator: "not:in", value: [admin] }', 'rules[0].when.operator: not:in compares actor.roles, a list, as a whole: it always holds; to test its items use not:contains (one value) or not:someFact:in (none of several)'],
    ['{ fact: actor.roles, operator: "swap:contains", value: [a, b] }', 'rules[0].when.operator: swap:contains compares actor.roles, a list, as a whole: it never holds; to test its items use contains (one value) or someFact:in (any of several)'],
    ['{ fact: actor.roles, operator: greaterThan, value: 3 }', 'rules[0].when.operator: greaterThan compares numbers, and actor.roles is a list: it can never match as meant; use someFact:greaterThan'],
    ['{ fact: actor.roles, operator: contains, value: 5 }', 'rules[0].when.value: can never match: the items of actor.roles are strings, never 5'],
    ['{ fact: metadata.changedFields, operator: "someFact:someFact:equal", value: x }', 'rules[0].when.operator: someFact:someFact:equal looks at the items of a list, and each item of metadata.changedFields is a string, never a list: it can never match; drop someFact:'],
    ['{ fact: resource.classification, operator: in, value: [pii, Restricted] }', 'rules[0].when.value: can never match: resource.classification is always lower-case, never "Restricted"; write "restricted"'],
    ['{ fact: resource.classification, operator: contains, value: pii }', 'rules[0].when.operator: contains looks inside a list, and resource.classification is a string, never a list: it can never match as meant; use equal'],
    ['{ fact: actor.id, operator: "swap:in", value: admin }', 'rules[0].when.operator: swap:in looks inside a list, and actor.id is a string, never a list: it can never match as meant; use equal (no swap:)'],
    ['{ fact: risk.band, operator: equal, value: High }', 'rules[0].when.value: can never match: risk.band is always lower-case, never "High"; write "high"'],
    ['{ fact: session.geoChanged, operator: equal, value: "true" }', 'rules[0].when.value: can never match: session.geoChanged is true or false, never "true"'],
    ['{ fact: session.geoChanged, operator: greaterThan, value: 0 }', 'rules[0].when.operator: greaterThan compares numbers, and session.geoChanged is true or false: it can never match as meant'],
    ['{ fact: metadata.requestedCount, operator: equal, value: "5" }', 'rules[0].when.value: can never match: metadata.requestedCount is a number, never "5"'],
    // Negative comparisons with such a literal hold for everyone.
    ['{ fact: metadata.requestedCount, operator: notEqual, value: "5" }', 'rules[0].when.value: always holds: metadata.requestedCount is a number, never "5"'],
    ['{ fact: resource.classification, operator: notIn, value: [pii, Restricted] }', 'rules[0].when.value: always holds: resource.classification is always lower-case, never "Restricted"; write "restricted"'],
    ['{ fact: actor.roles, operator: doesNotContain, value: 5 }', 'rules[0].when.value: always holds: the items of actor.roles are strings, never 5'],
    ['{ fact: risk.band, operator: "not:equal", value: High }', 'rules[0].when.value: always holds: risk.band is always lower-case, never "High"; write "high"'],
    ['{ fact: risk.band, operator: "not:notEqual", value: High }', 'rules[0].when.value: can never match: risk.band is always lower-case, never "High"; write "high"'],
    ['{ fact: metadata.hasProofToken, operator: "not:exists", value: true }', 'rules[0].when.value: not:exists: true never holds: metadata.hasProofToken is on every request; drop the condition'],
    ['{ not: { any: [{ fact: metadata.requestedCount, operator: greaterThan, value: { fact: velocity.serviceCount } }] } }', 'rules[0].when.not.any[0].value.fact: reads velocity.serviceCount, which TPS counts only for a policy with throttle.serviceWindow: here it is always absent; add throttle.serviceWindow'],
  ];
  for (const [condition, problem] of refused) t.deepEqual(problems(condition), [problem], condition);

  for (const accepted of [
    '{ fact: actor.roles, operator: "everyFact:in", value: [admin, support] }',
    '{ fact: actor.roles, operator: doesNotContain, value: admin }',
    '{ fact: actor.roles, operator: "swap:in", value: admin }',
    '{ fact: actor.roles, operator: exists, value: true }',
    '{ fact: resource.classification, operator: "swap:contains", value: [pii, restricted] }',
    '{ fact: resource.classification, operator: exists, value: false }',
    '{ fact: actor.id, operator: notIn, value: { fact: requestData.approvers } }',
    '{ fact: metadata.requestedCount, operator: "someValue:lessThan", value: [5, 10] }',
    '{ fact: operation.resourceType, operator: equal, value: Customer }',
    '{ fact: requestData.fields, operator: "swap:in", value: customer.ssn }',
  ]) {
    t.deepEqual(problems(accepted), [], accepted);
  }
});
