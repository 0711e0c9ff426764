import { Engine, Fact } from 'json-rules-engine';
import { loadCatalog, lookupOperation } from '../src/policy/catalog.js';
import { buildFacts } from '../src/facts/facts.js';
import { assessRisk } from '../src/risk/score.js';
import { newEngine } from '../src/policy/compile.js';
import { CASES } from './mix.js';
const catalog = loadCatalog('/work/main');
const prepared = CASES.map((c) => { const req = c.body(1) as any; const op = lookupOperation(catalog, 'bench', req.operationKey)!; const policy = catalog.policies.get(op.policyId)!; const facts = buildFacts(req, op, Date.now()); const risk = assessRisk(policy.signals, facts, policy.thresholds); 
  const slim = newEngine(); for (const r of (policy.compiled.rules as any[])) slim.addRule({ ...r, event: { type: r.event.type, params: { index: r.event.params.index } } });
  return { policy, slim, facts: { ...facts, velocity: {serviceCount: 3}, risk: { score: risk.score, band: risk.band, base: risk.score } } as Record<string, unknown> }; });
const U = { cache: false };
async function run(engine: (p: any) => Engine) {
  const N = 30000; const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) { const p = prepared[i % prepared.length]!; const rt: Record<string, Fact> = {}; for (const id in p.facts) rt[id] = new Fact(id, p.facts[id], U); await engine(p).run(rt); }
  return Number(process.hrtime.bigint() - t) / 1000 / N;
}
for (let r = 0; r < 4; r++) console.log('full', (await run((p) => p.policy.engine)).toFixed(2), 'slim', (await run((p) => p.slim)).toFixed(2));
const eng: any = prepared[4]!.policy.engine;
const rules = eng.rules;
console.log(rules.length, Object.keys(rules[0]), JSON.stringify(rules[0].conditions).slice(0, 400));
console.log(Object.keys(rules[0].conditions.all[0]));
