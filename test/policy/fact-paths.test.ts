import test from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { buildFacts } from '../../src/facts/facts.js';
import { FACT_LEAVES, OPEN_FACT_ROOTS, RULE_ONLY_ROOTS } from '../../src/facts/paths.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { tempConfig } from '../helpers/config.js';
import { REPO_ROOT } from '../helpers/tps.js';

// The fact paths validation accepts (src/facts/paths.ts) are the facts an evaluation builds: a path
// validation accepted that no evaluation sets would read absent on every request.

const everything: EvaluateRequest = {
  operationKey: 'customer.create',
  actor: { id: 'u1', authenticated: true, role: 'admin', roles: ['support'], trusted: true, sessionAgeMinutes: 5 },
  resource: { type: 'customer', id: 'c1', ownerId: 'u1', classification: 'PII' },
  requestData: { requestedCount: 3, amount: 10 },
  session: {
    sessionId: 's1', tabId: 't1', isNewDevice: false, continuityStrength: 0.9, recentHumanSignalAt: '2025-01-08T11:59:00Z', recentHumanSignalAgeSeconds: 5,
    geoChanged: false, networkChanged: false, ipAddress: '192.0.2.1', userAgent: 'ua',
  },
  metadata: {
    requestedCount: 3, velocityWindowCount: 1, changedFields: ['email'], resourceCount: 3, abnormalSequence: false, objectAccessRare: false,
    suspiciousTimeWindow: false, localHour: 12, proofToken: 'p', notes: 'n',
  },
  challengeResult: { type: 'passkey', passed: true },
  rawSignals: { botScore: 0.1 },
};

test('the leaves validation knows are those buildFacts builds, and the open roots the rest', (t) => {
  const op = loadCatalog(REPO_ROOT).operations.get('customer.create')!;
  const facts = buildFacts(everything, op, Date.parse('2025-01-08T12:00:00Z')) as unknown as Record<string, Record<string, unknown>>;
  const fixed = Object.keys(FACT_LEAVES).filter((root) => !(RULE_ONLY_ROOTS as readonly string[]).includes(root));
  t.deepEqual(Object.keys(facts).sort(), [...fixed, ...OPEN_FACT_ROOTS].sort());
  for (const root of fixed) t.deepEqual(Object.keys(facts[root]!).sort(), [...FACT_LEAVES[root as keyof typeof FACT_LEAVES]].sort(), root);
});

test('the rule-only leaves (velocity.*, risk.*) are those the evaluator hands the rules', async (t) => {
  const leaves = RULE_ONLY_ROOTS.flatMap((root) => FACT_LEAVES[root].map((leaf) => `${root}.${leaf}`));
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  const rules = leaves.map((fact, i) => `  - name: reads-${i}\n    when: { fact: ${fact}, operator: exists, value: true }\n    then: { decision: deny, reason: r_deny }`);
  cfg.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', `stepUp: { challenge: passkey }\nthrottle: { serviceWindow: { seconds: 60, max: 100 } }\nrules:\n${rules.join('\n')}`);
  const { event } = await new OfflineEvaluator({ catalog: loadCatalog(cfg.dir) }).evaluate(everything);
  const fired = (event.explanation as { rules: { name: string; fired: boolean }[] }).rules.filter((r) => r.name.startsWith('reads-'));
  t.deepEqual(
    fired.map((r) => [leaves[Number(r.name.slice('reads-'.length))], r.fired]),
    leaves.map((fact) => [fact, true]),
  );
});
