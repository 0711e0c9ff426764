import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OfflineEvaluator } from '../src/evaluate/offline.js';
import { buildFacts } from '../src/facts/facts.js';
import { lookupOperation, loadCatalog } from '../src/policy/catalog.js';
import { runPolicy } from '../src/policy/run.js';
import { assessRisk } from '../src/risk/score.js';
import { prepareEvent, toRow, type EventRecord } from '../src/store/eventStore.js';
import { encodeExplanation } from '../src/store/explanationCodec.js';
import { validateEvaluateRequest } from '../src/validate/evaluateRequest.js';
import { evaluateBodies } from './mix.js';

/**
 * `tsx bench/stages.ts`: microseconds per call of each stage of the evaluate path, in process and
 * with no HTTP or store, over the benchmark's mix. It says where a request's CPU goes.
 *
 * Each stage is timed twice: warm, its calls back to back, and cold, each call after touching
 * STAGES_EVICT_MB of other memory (default 4, twice a core's L2 on the VMs measured), as the other
 * threads' work does between two answers in the server. Warm figures understated the server's
 * cost two to three times: the explanation's JSON and zstd read 10 µs warm, 31 cold, and taking
 * them out of a server build saved 30 µs an answer (bench/ROUNDS.md, twenty-second round).
 * The last line is the figures as JSON.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.env.STAGES_N ?? 20_000);
const COLD_N = Math.max(50, Math.floor(N / 20));
const EVICT_MB = Number(process.env.STAGES_EVICT_MB ?? 4);
if (!(EVICT_MB > 0)) throw new Error(`STAGES_EVICT_MB takes a number of MiB above 0, got "${process.env.STAGES_EVICT_MB}"`);
const evicted = new Uint8Array(Math.round(EVICT_MB * 1024 * 1024));
const catalog = loadCatalog(ROOT);
const events: EventRecord[] = [];
const { evaluator } = new OfflineEvaluator({ catalog, record: (e) => void (events.length < 1000 && events.push(e)) });

const bodies = evaluateBodies(0);
const parsed = bodies.map((b) => JSON.parse(b));

// A write to every cache line, so that what the stage had in cache is gone, and dirty lines too.
function evict(): void {
  for (let i = 0; i < evicted.length; i += 64) evicted[i]!++;
}

const stages: { name: string; warmUs: number; coldUs: number }[] = [];
const us = (ns: bigint, calls: number) => Math.round(Number(ns) / 10 / calls) / 100;

async function time(name: string, fn: (i: number) => unknown): Promise<void> {
  for (let i = 0; i < N / 4; i++) await fn(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await fn(i);
  const warmUs = us(process.hrtime.bigint() - start, N);
  let cold = 0n;
  for (let i = 0; i < COLD_N; i++) {
    evict();
    const t0 = process.hrtime.bigint();
    await fn(i);
    cold += process.hrtime.bigint() - t0;
  }
  const coldUs = us(cold, COLD_N);
  stages.push({ name, warmUs, coldUs });
  console.log(`${warmUs.toFixed(2).padStart(8)} ${coldUs.toFixed(2).padStart(8)}  ${name}`);
}

const env = 'bench';
console.log(`µs per call, warm (back to back) and cold (each after touching ${evicted.length / 1024 / 1024} MiB)\n    warm     cold  stage`);
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
await time('encodeExplanation (its JSON and zstd, within toRow)', (i) => encodeExplanation(events[i % events.length]!.explanation));
await time('prepareEvent (toRow, then the row as the text the thread hands over)', (i) => prepareEvent(events[i % events.length]!));
await time('JSON.stringify(response-sized object)', (i) => JSON.stringify(events[i % events.length]!.reasons) + JSON.stringify(prepared[i % prepared.length]!.op));
console.log(JSON.stringify({ evictBytes: evicted.length, calls: { warm: N, cold: COLD_N }, stages }));
