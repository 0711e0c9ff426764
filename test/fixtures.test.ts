// Every rules/*.fixtures.yaml case as one ava test, named after its file and case, so `npm test`
// runs the policy fixtures; `tps test` runs the same cases without ava. Cases go through the
// server's Evaluator offline (src/fixtures/run.ts).
import test from 'ava';
import { describeFailure } from '../src/fixtures/report.js';
import { runCase } from '../src/fixtures/run.js';
import { coverageOf, prepareFixtures } from '../src/fixtures/suite.js';
import { formatProblem } from '../src/policy/problems.js';
import { REPO_ROOT } from './helpers/tps.js';

const { catalog, suites, problems } = prepareFixtures(REPO_ROOT);

test('the configuration and its fixtures load without problems', (t) => {
  t.deepEqual(problems.map(formatProblem), []);
  t.truthy(catalog);
  t.true(suites.length >= 5);
});

for (const suite of suites) {
  for (const c of suite.cases) {
    test(`${suite.file} › ${c.name}`, async (t) => {
      const result = await runCase(catalog!, c);
      if (!result.ok) t.fail(`\n${describeFailure(result)}`);
      else t.pass();
    });
  }

  test(`${suite.file} › reaches every decision policy "${suite.policyId}" can produce`, async (t) => {
    const results = await Promise.all(suite.cases.map((c) => runCase(catalog!, c)));
    const [coverage] = coverageOf(catalog!, [suite], results);
    t.deepEqual(coverage!.missing, [], `not reached: ${coverage!.missing.join(', ')}`);
  });
}
