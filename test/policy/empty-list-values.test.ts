// An empty list where an operator's value must be a list is a located problem: `in: []` never
// matches and `notIn: []` always does (someValue and everyValue over nothing likewise), almost
// surely a slip in a security policy, which validation used to accept.
import test from 'ava';
import { compileCatalog } from '../../src/policy/catalog.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { runTps } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';

const LIST = 'a non-empty list of strings, numbers or booleans';

/** A policy file whose one rule has this condition, in block style: its value is on line 8. */
const policy = (fact: string, operator: string, value: string) =>
  [
    'id: allow-list',
    'rules:',
    '  - name: outside-office-hours',
    '    when:',
    '      all:',
    `        - fact: ${fact}`,
    `          operator: "${operator}"`,
    `          value: ${value}`,
    '    then: { decision: deny, reason: r_deny }',
    '',
  ].join('\n');

/** `tps validate DIR` in a process of its own, as a user runs it. */
const tpsValidate = (dir: string) => runTps(['validate', dir]);

test('tps validate reports `in: []` with its file, line and YAML path, and fails', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write('rules/allow-list.yaml', policy('metadata.localHour', 'in', '[]'));
  const res = await tpsValidate(cfg.dir);
  t.is(res.code, 1, res.stdout + res.stderr);
  const where = 'rules[0].when.all[0].value';
  t.deepEqual(res.stderr.trim().split('\n'), ['1 problem:', `  ${cfg.path('rules/allow-list.yaml')}:8 at ${where}: ${where} must be ${LIST} for operator in`]);

  // A list with something in it is a tree the server starts with.
  cfg.write('rules/allow-list.yaml', policy('metadata.localHour', 'in', '[0, 1, 2]'));
  const ok = await tpsValidate(cfg.dir);
  t.is(ok.code, 0, ok.stderr);
});

test('every operator whose value must be a list refuses an empty one, decorators and nesting included', (t) => {
  const problems = (fact: string, operator: string, value: string) => {
    const cfg = tempConfig({ fixtures: false });
    try {
      cfg.write('rules/allow-list.yaml', policy(fact, operator, value));
      return compileCatalog(loadConfigDir(cfg.dir)).problems.map((p) => `${p.line} ${p.path}: ${p.message}`);
    } finally {
      cfg.cleanup();
    }
  };
  const refused = (fact: string, operator: string, value: string, shape: string) =>
    t.deepEqual(problems(fact, operator, value), [`8 rules[0].when.all[0].value: rules[0].when.all[0].value must be ${shape} for operator ${operator}`], `${operator}: ${value}`);

  refused('metadata.localHour', 'notIn', '[]', LIST);
  refused('metadata.localHour', 'not:in', '[]', LIST);
  refused('actor.roles', 'someFact:in', '[]', LIST);
  refused('actor.roles', 'everyFact:notIn', '[]', LIST);
  // someValue/everyValue over nothing: never, or always, true.
  refused('actor.id', 'someValue:equal', '[]', 'a non-empty list of strings, numbers or booleans');
  refused('metadata.localHour', 'everyValue:lessThan', '[]', 'a non-empty list of numbers');
  refused('metadata.localHour', 'someValue:in', '[[1, 2], []]', `a non-empty list of non-empty lists of strings, numbers or booleans`);
  // After swap: the value stands where the fact would, and contains looks inside it.
  refused('actor.id', 'swap:contains', '[]', LIST);

  for (const [fact, operator, value] of [
    ['metadata.localHour', 'notIn', '[3]'],
    ['metadata.localHour', 'someValue:in', '[[1, 2], [3]]'],
    ['actor.id', 'swap:contains', '[a]'],
    // An empty string is a value, not a list: equal compares with it.
    ['actor.id', 'equal', '""'],
  ] as const) {
    t.deepEqual(problems(fact, operator, value), [], `${operator}: ${value}`);
  }
});
