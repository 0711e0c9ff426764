// Run by list-side.test.ts in a process of its own: a policy whose rule the engine throws on (an
// operator validation would refuse, compiled without validation), run once; prints the outcomes.
import { compilePolicy } from '../../src/policy/compile.js';
import { runPolicy } from '../../src/policy/run.js';
import type { PolicySpec } from '../../src/policy/schema.js';

const spec = {
  id: 'failing',
  rules: [
    { name: 'slow-down', when: { fact: 'requestData.count', operator: 'greaterThan', value: 5 }, then: { decision: 'throttle', reason: 'r_slow' } },
    { name: 'broken', when: { fact: 'requestData.account', operator: 'noSuchOperator', value: 'x' }, then: { decision: 'deny', reason: 'r_broken' } },
    { name: 'quiet', when: { fact: 'requestData.count', operator: 'lessThan', value: 0 }, then: { decision: 'deny', reason: 'r_quiet' } },
  ],
} as unknown as PolicySpec;

const run = await runPolicy(compilePolicy(spec, {}), { requestData: { count: 9, account: 'acct-secret-4711' } });
process.stdout.write(JSON.stringify(run.outcomes));
