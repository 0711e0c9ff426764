// Run by list-side.test.ts in a process of its own: a policy whose rule the engine throws on (an
// operator validation would refuse, compiled without validation), run three times; prints the
// outcomes on stderr (stdout is where the failure's log line goes). Then the same rule's failure a
// minute later, and another rule's at once: each said once more.
import { compilePolicy } from '../../src/policy/compile.js';
import { logRuleFailure, RULE_FAILURE_LOG_EVERY_MS } from '../../src/policy/failures.js';
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

const policy = compilePolicy(spec, {});
const runs = [];
for (let i = 0; i < 3; i++) runs.push(await runPolicy(policy, { requestData: { count: 9, account: 'acct-secret-4711' } }));
logRuleFailure('failing', 'broken', new Error('again'), Date.now() + RULE_FAILURE_LOG_EVERY_MS + 1000);
logRuleFailure('failing', 'other', new Error('another rule'));
process.stderr.write(JSON.stringify(runs.map((r) => r.outcomes)));
