import { Session } from 'node:inspector/promises';
import fs from 'node:fs';
import { loadConfigDir } from '../src/policy/load.js';
import { compiledCatalog } from '../src/policy/catalog.js';
import { openState } from '../src/state/open.js';
import { Evaluator } from '../src/evaluate/evaluator.js';
import { advisoryPort } from '../src/ai/port.js';
import { evaluateBody } from '../src/evaluate/body.js';
import { answerOf } from '../src/evaluate/runner.js';
import { prepareEvent } from '../src/store/eventWrites.js';
import { evaluateBodies } from '../bench/mix.js';

const catalog = compiledCatalog(loadConfigDir('.'));
const state = openState(undefined);
const evaluator = new Evaluator({ catalog: () => catalog, counters: state.counters, challenges: state.challenges, advisor: advisoryPort({ assess: async () => ({ status: 'skipped' }) as never }), challengeTtlMs: 300_000 });
const bodies = Array.from({ length: 32 }, (_, c) => evaluateBodies(c)).flat();
const env = process.argv[2] ?? 'production';
async function one(i: number) {
  const { response, event } = await evaluateBody(evaluator, env, bodies[i % bodies.length]!);
  const a = answerOf(response); const p = prepareEvent(event);
  return a.json.length + p.valuesJson.length;
}
for (let i = 0; i < 20000; i++) await one(i);
const N = Number(process.argv[3] ?? 50000);
const mode = process.argv[4] ?? 'time';
if (mode === 'heap') {
  const s = new Session(); s.connect();
  await s.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  for (let i = 0; i < N; i++) await one(i);
  const { profile } = await s.post('HeapProfiler.stopSampling');
  fs.writeFileSync('/tmp/alloc.heapprofile', JSON.stringify(profile));
  // self bytes by function
  const self = new Map<string, number>(); let total = 0;
  const walk = (n: any) => { const b = n.selfSize; total += b; const k = `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*\/work\/main\//, '')}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + b); n.children.forEach(walk); };
  walk(profile.head);
  console.log(`allocated per evaluation: ${(total / N / 1024).toFixed(1)} KB`);
  for (const [k, b] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`${(b / N).toFixed(0).padStart(7)} B  ${k}`);
} else {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) await one(i);
  console.log(`${((performance.now() - t0) * 1000 / N).toFixed(1)} µs per evaluation`);
}
await state.close();
