import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Evaluator } from '../src/evaluate/evaluator.js';
import { buildFacts } from '../src/facts/facts.js';
import { lookupOperation, loadCatalog } from '../src/policy/catalog.js';
import { runPolicy } from '../src/policy/run.js';
import { assessRisk } from '../src/risk/score.js';
import { MemoryChallengeStore } from '../src/state/challenges.js';
import { MemoryVelocityCounter } from '../src/state/counters.js';
import { toRow, type EventRecord } from '../src/store/eventStore.js';
import { validateEvaluateRequest } from '../src/validate/evaluateRequest.js';
import { CASES } from './mix.js';

/**
 * `tsx bench/stages.ts`: microseconds per call of each stage of the evaluate path, in process and
 * with no HTTP or store, over the benchmark's mix. It says where a request's CPU goes.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.STAGES_N ?? 20_000);
const catalog = loadCatalog(ROOT);
const events: EventRecord[] = [];
const evaluator = new Evaluator({
  catalog: () => catalog,
  counters: new MemoryVelocityCounter(),
  challenges: new MemoryChallengeStore(),
  record: async (e) => void (events.length < 1000 && events.push(e)),
  challengeTtlMs: 600_000,
});

const bodies = Array.from({ length: 700 }, (_, i) => JSON.stringify(CASES[i % CASES.length]!.body(Math.floor(i / CASES.length))));
const parsed = bodies.map((b) => JSON.parse(b));

async function time(name: string, fn: (i: number) => unknown): Promise<void> {
  for (let i = 0; i < N / 4; i++) await fn(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn(i);
  const us = Number(process.hrtime.bigint() - start) / 1000 / N;
  console.log(`${us.toFixed(2).padStart(8)} µs  ${name}`);
}

const env = 'bench';
await time('JSON.parse(body)', (i) => JSON.parse(bodies[i % bodies.length]!));
await time('validateEvaluateRequest', (i) => validateEvaluateRequest(parsed[i % parsed.length]));
await time('evaluator.evaluate (record is a no-op)', (i) => evaluator.evaluate(env, parsed[i % parsed.length]));
const prepared = parsed.map((req) => {
  const op = lookupOperation(catalog, env, req.operationKey)!;
  const policy = catalog.policies.get(op.policyId)!;
  const facts = buildFacts(req, op, Date.now());
  const risk = assessRisk(policy.signals, facts, policy.thresholds);
  return { req, op, policy, facts, risk };
});
await time('buildFacts', (i) => buildFacts(prepared[i % prepared.length]!.req, prepared[i % prepared.length]!.op, Date.now()));
await time('assessRisk', (i) => assessRisk(prepared[i % prepared.length]!.policy.signals, prepared[i % prepared.length]!.facts, prepared[i % prepared.length]!.policy.thresholds));
await time('runPolicy (json-rules-engine)', (i) => {
  const p = prepared[i % prepared.length]!;
  return runPolicy(p.policy, { ...p.facts, velocity: { serviceCount: 3 }, risk: { score: p.risk.score, band: p.risk.band, base: p.risk.score } });
});
await time('toRow (event to columns, JSON)', (i) => toRow(events[i % events.length]!));
await time('JSON.stringify(response-sized object)', (i) => JSON.stringify(events[i % events.length]!.reasons) + JSON.stringify(prepared[i % prepared.length]!.op));
