import test from 'ava';
import fc from 'fast-check';
import { buildFacts } from '../../src/facts/facts.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { compilePolicy } from '../../src/policy/compile.js';
import { assessRisk, bandOf } from '../../src/risk/score.js';
import { compileSignal } from '../../src/risk/signals.js';
import { REPO_ROOT } from '../helpers/tps.js';
import { loadConfigDir } from '../../src/policy/load.js';

const catalog = loadCatalog(REPO_ROOT);
const op = catalog.operations.get('customer.create')!;
const policy = catalog.policies.get('standard')!;
const facts = (extra: object = {}) => buildFacts({ operationKey: op.key, actor: { id: 'u' }, resource: { type: 'customer', id: 'c' }, ...extra }, op, 0);

test('each transform maps its fact into 0..1', (t) => {
  const s = (spec: object) => compileSignal('x', { fact: 'metadata.localHour', weight: 10, ...spec } as never);
  t.is(s({ transform: 'between', range: [22, 5] }).measure({ metadata: { localHour: 23 } }), 1);
  t.is(s({ transform: 'between', range: [22, 5] }).measure({ metadata: { localHour: 12 } }), 0);
  t.is(s({ transform: 'ramp', range: [10, 20] }).measure({ metadata: { localHour: 15 } }), 0.5);
  t.is(s({ transform: 'ramp', range: [10, 20] }).measure({ metadata: { localHour: 99 } }), 1);
  t.is(s({ transform: 'inverse' }).measure({ metadata: { localHour: 0.25 } }), 0.75);
  t.is(s({ transform: 'clamp' }).measure({ metadata: { localHour: 7 } }), 1);
  t.is(s({ transform: 'flag', equals: false }).measure({ metadata: { localHour: false } }), 1);
  t.is(s({ transform: 'nonEmpty' }).measure({ metadata: { localHour: [] } }), 0);
  t.is(s({ transform: 'map', values: { a: 0.4 } }).measure({ metadata: { localHour: 'a' } }), 0.4);
  t.is(s({ transform: 'inverse', missing: 0.5 }).measure({ metadata: {} }), 0.5);
});

test('contributions are value × weight and add up to the score', (t) => {
  const r = assessRisk(policy.signals, facts({ session: { continuityStrength: 0.1, isNewDevice: true } }), policy.thresholds);
  for (const c of r.contributions) t.is(c.contribution, c.value * c.weight);
  t.true(Math.abs(r.contributions.reduce((a, c) => a + c.contribution, 0) - r.score) < 0.01);
  t.deepEqual(r.reasons, ['weak_session_continuity', 'missing_recent_human_signal', 'new_device']);
});

test('the score stays within 0..100 whatever the facts (property)', (t) => {
  fc.assert(
    fc.property(
      fc.record({
        continuityStrength: fc.double({ min: 0, max: 1, noNaN: true }),
        isNewDevice: fc.boolean(),
        geoChanged: fc.boolean(),
        networkChanged: fc.boolean(),
        recentHumanSignalAgeSeconds: fc.double({ min: 0, max: 1e6, noNaN: true }),
      }),
      fc.record({ requestedCount: fc.nat(), velocityWindowCount: fc.nat(), localHour: fc.integer({ min: 0, max: 23 }), abnormalSequence: fc.boolean(), objectAccessRare: fc.boolean(), suspiciousTimeWindow: fc.boolean() }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (session, metadata, botScore) => {
        const r = assessRisk(policy.signals, facts({ session, metadata, rawSignals: { botScore }, actor: { id: 'u', authenticated: false } }), policy.thresholds);
        return r.score >= 0 && r.score <= 100 && r.band === bandOf(r.score, policy.thresholds) && new Set(r.reasons).size === r.reasons.length;
      },
    ),
  );
  t.pass();
});

test('a policy can override a signal weight, and that changes its version id', (t) => {
  const loaded = loadConfigDir(REPO_ROOT);
  const spec = loaded.policies.find((p) => p.spec.id === 'standard')!.spec;
  const heavier = compilePolicy({ ...spec, weights: { new_device: 40 } }, loaded.signals!.spec);
  t.is(heavier.signals.find((s) => s.name === 'new_device')!.weight, 40);
  t.not(heavier.versionId, policy.versionId);
  t.is(compilePolicy(spec, loaded.signals!.spec).versionId, policy.versionId, 'the same input compiles to the same version');
  const r = assessRisk(heavier.signals, facts({ session: { isNewDevice: true, continuityStrength: 1, recentHumanSignalAgeSeconds: 1 } }), heavier.thresholds);
  t.is(r.contributions.find((c) => c.name === 'new_device')!.contribution, 40);
});
