import test from 'ava';
import fc from 'fast-check';
import { Fact } from 'json-rules-engine';
import { compilePolicy, type CompiledRule } from '../../src/policy/compile.js';
import { newEngine } from '../../src/policy/engines.js';
import { factsOf, leaf } from '../../src/policy/conditions.js';
import { directCheck } from '../../src/policy/direct.js';
import type { PolicySpec } from '../../src/policy/schema.js';
import { runPolicy, type PolicyFacts } from '../../src/policy/run.js';

// Every shorthand at once, so that each direct check is compared with the engine's reading of the
// conditions the compiled policy shows for it.
const SPEC = {
  id: 'all-shorthands',
  thresholds: { medium: 30, high: 60, stepUp: 60, deny: 85 },
  requireRoles: ['finance', 'admin'],
  requireRecentHumanSignal: { maxAgeSeconds: 120 },
  throttle: { velocityWindowCount: 20, serviceWindow: { seconds: 60, max: 30 } },
  rules: [{ name: 'written', when: { all: [{ fact: 'metadata.requestedCount', operator: 'greaterThan', value: 100 }] }, then: { decision: 'deny', reason: 'r' } }],
} as unknown as PolicySpec;
const policy = compilePolicy(SPEC, {});
const shorthands = policy.rules.filter((r) => r.check);

/** What json-rules-engine itself says of the rule's conditions on these facts. */
async function engineSays(rule: CompiledRule, facts: PolicyFacts): Promise<boolean> {
  const engine = newEngine();
  engine.addRule({ conditions: rule.conditions, event: { type: 'hit' } });
  const runtime: Record<string, Fact> = {};
  for (const id in facts) runtime[id] = new Fact(id, facts[id], { cache: false });
  const { results } = await engine.run(runtime);
  return results.length === 1;
}

// Around each limit (20, 30, 60, 85, 120), as numbers and as the strings the engine's numeric test accepts or refuses.
const near = fc.oneof(fc.integer({ min: -5, max: 130 }), fc.double({ noNaN: false }), fc.constantFrom(0, 20, 21, 30, 31, 59, 60, 84, 85, 120, 121));
const value = fc.oneof(
  near,
  near.map(String),
  fc.constantFrom(undefined, null, true, false, '', 'abc', '25abc', ' 121', [], {}, [121]),
  fc.array(fc.oneof(fc.constantFrom('finance', 'admin', 'sales', 'support'), fc.string(), fc.integer()), { maxLength: 4 }),
);
const root = (key: string) => fc.oneof({ weight: 6, arbitrary: fc.record({ [key]: value }, { requiredKeys: [] }) }, fc.constantFrom(undefined, null, 'text', 7));
const facts: fc.Arbitrary<PolicyFacts> = fc.record({
  actor: root('roles'),
  session: root('humanSignalAgeSeconds'),
  metadata: root('velocityWindowCount'),
  velocity: root('serviceCount'),
  risk: root('score'),
});

test('each shorthand is checked directly, and its check says what json-rules-engine says of its conditions', async (t) => {
  t.deepEqual(
    shorthands.map((r) => r.name),
    ['require-roles', 'require-recent-human-signal', 'caller-velocity-limit', 'service-velocity-limit', 'score-deny', 'score-step-up'],
  );
  await fc.assert(
    fc.asyncProperty(facts, async (f) => {
      for (const rule of shorthands) if (rule.check!(f) !== (await engineSays(rule, f))) return false;
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass();
});

test('only rules written under rules: reach the engine, with only the facts they read', async (t) => {
  t.deepEqual(
    policy.rules.filter((r) => !r.check).map((r) => r.name),
    ['written'],
  );
  t.deepEqual(policy.engineFacts, ['metadata']);
  t.deepEqual(factsOf({ any: [{ fact: 'a', value: 1 }, { not: { fact: 'b', value: { fact: 'c' } } }] }), ['a', 'b', 'c']);

  const run = await runPolicy(policy, { actor: { roles: ['admin'] }, session: { humanSignalAgeSeconds: 5 }, metadata: { requestedCount: 101 }, risk: { score: 86 } });
  t.deepEqual(
    run.fired.map((r) => r.name),
    ['score-deny', 'score-step-up', 'written'],
  );
  t.is(compilePolicy({ id: 'only-shorthands', requireRoles: ['admin'] } as unknown as PolicySpec, {}).engines, null, 'no engine when every rule is a shorthand');
  // A shorthand the checks cannot read fails the compile, never the evaluation.
  t.throws(() => directCheck(leaf('actor.id', 'equal', 'x')), { message: 'no direct check for the operator equal' });
  t.throws(() => directCheck({ all: [leaf('risk.score', 'greaterThan', 1)] }), { message: /a shorthand is a comparison/ });
});
