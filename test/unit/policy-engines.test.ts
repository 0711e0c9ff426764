import test from 'ava';
import { compilePolicy } from '../../src/policy/compile.js';
import type { PolicySpec } from '../../src/policy/schema.js';
import { runPolicy, type PolicyRun } from '../../src/policy/run.js';

const policy = compilePolicy(
  {
    id: 'bulk',
    rules: [
      { name: 'deny-huge', when: { all: [{ fact: 'metadata.requestedCount', operator: 'greaterThan', value: 50000 }] }, then: { decision: 'deny', reason: 'export_volume_limit' } },
      { name: 'redact-bulk', when: { all: [{ fact: 'metadata.requestedCount', operator: 'greaterThanInclusive', value: 1000 }] }, then: { decision: 'allow_redacted', reason: 'policy_redaction_applied' } },
    ],
  } as unknown as PolicySpec,
  {},
);
const huge = { metadata: { requestedCount: 60000 } };
const names = (run: PolicyRun) => run.fired.map((r) => r.name);

const microtasks = async (n: number) => {
  for (let i = 0; i < n; i++) await undefined;
};

/** How many microtasks a run takes alone: the distances at which a second run can meet its end. */
async function runLength(): Promise<number> {
  let done = false;
  void runPolicy(policy, huge).then(() => (done = true));
  let n = 0;
  for (; !done; n++) await undefined;
  return n;
}

// Evaluations of one policy can resume in one turn (Redis replies read from one socket chunk), so
// their runs overlap at any distance. json-rules-engine keeps a run's status on its Engine: on a
// shared engine, a run begun as another finished skipped every rule.
test('runs of one policy that overlap each fire their rules, whatever the distance between their starts', async (t) => {
  // Every distance up to past a run's whole length, however many steps json-rules-engine takes.
  const length = await runLength();
  t.true(length > 1);
  for (let distance = 0; distance <= length + 5; distance++) {
    const first = runPolicy(policy, huge);
    await microtasks(distance);
    const second = runPolicy(policy, huge);
    t.deepEqual(names(await first), ['deny-huge', 'redact-bulk'], `first run, second started ${distance} microtasks later`);
    t.deepEqual(names(await second), ['deny-huge', 'redact-bulk'], `second run, started ${distance} microtasks after the first`);
  }
});

test('a burst of overlapping runs: each fires exactly the rules its own facts meet', async (t) => {
  const length = await runLength();
  const runs = Array.from({ length: 200 }, async (_, i) => {
    await microtasks(i % (length + 5));
    const count = i % 3 === 0 ? 60000 : i % 3 === 1 ? 5000 : 10;
    return { count, run: await runPolicy(policy, { metadata: { requestedCount: count } }) };
  });
  for (const { count, run } of await Promise.all(runs)) {
    const want = count === 60000 ? ['deny-huge', 'redact-bulk'] : count === 5000 ? ['redact-bulk'] : [];
    t.deepEqual(names(run), want, `requestedCount ${count}`);
  }
});
