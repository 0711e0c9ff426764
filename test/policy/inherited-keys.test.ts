import test from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { OfflineEvaluator } from '../../src/evaluate/offline.js';
import { compileCatalog, loadCatalog } from '../../src/policy/catalog.js';
import { loadConfigDir } from '../../src/policy/load.js';
import { assessRisk } from '../../src/risk/score.js';
import { compileSignal } from '../../src/risk/signals.js';
import { runCli } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';
import { get, post, REPO_ROOT, startTps } from '../helpers/tps.js';

// A caller's string, or a name in the YAML, that is also a property every object inherits
// ("constructor", "__proto__", "toString") is an ordinary key: it must not read the inherited value.

const INHERITED = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

const classified = (classification: string): EvaluateRequest => ({
  operationKey: 'customer.create',
  actor: { id: 'u1', authenticated: true },
  resource: { type: 'customer', id: 'c1', classification },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
});

const decisionOf = (body: { decision: string; score: number; riskBand: string; reasons: string[] }) => ({ decision: body.decision, score: body.score, riskBand: body.riskBand, reasons: body.reasons });

test.serial('a classification named like an inherited property is an unlisted one: 200, a finite score, a stored event, and offline agrees', async (t) => {
  const tps = await startTps({ env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(() => tps.close());
  const offline = new OfflineEvaluator({ catalog: loadCatalog(REPO_ROOT) });

  // resource.classification feeds the sample's map signal sensitive_resource; "internal" is not in its values.
  const unlisted = await post(`${tps.url}/api/evaluate`, classified('internal'), tps.secretKey);
  t.is(unlisted.status, 200);
  for (const classification of INHERITED) {
    const res = await post(`${tps.url}/api/evaluate`, classified(classification), tps.secretKey);
    t.is(res.status, 200, `${classification}: ${JSON.stringify(res.body)}`);
    t.true(Number.isFinite(res.body.score), classification);
    t.deepEqual(decisionOf(res.body), decisionOf(unlisted.body), classification);

    const stored = await get(`${tps.url}/api/events/${res.body.telemetryId}`, tps.secretKey);
    t.is(stored.status, 200, classification);
    t.is(stored.body.score, res.body.score, classification);

    const { response } = await offline.evaluate(classified(classification));
    t.deepEqual(decisionOf(response), decisionOf(res.body), `${classification} offline`);
  }
});

test.serial('tps explain shows a finite score for a classification named "constructor"', async (t) => {
  const file = tempConfig({ fixtures: false });
  t.teardown(file.cleanup);
  file.write('request.json', JSON.stringify(classified('constructor')));
  const { code, stdout, stderr } = await runCli(['explain', '--operation', 'customer.create', '--request', file.path('request.json'), '--json']);
  t.is(code, 0, stderr);
  const { response } = JSON.parse(stdout);
  t.true(Number.isFinite(response.score));
});

test('a signal named "constructor" keeps its own weight, and a policy weight for it needs it declared', (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write('rules/signals.yaml', `${cfg.read('rules/signals.yaml')}  constructor:\n    fact: rawSignals.constructorScore\n    transform: clamp\n    weight: 7\n`);
  const { catalog, problems } = compileCatalog(loadConfigDir(cfg.dir));
  t.deepEqual(problems, []);
  t.is(catalog!.policies.get('standard')!.signals.find((s) => s.name === 'constructor')!.weight, 7);

  const undeclared = tempConfig({ fixtures: false });
  t.teardown(undeclared.cleanup);
  undeclared.replace('rules/standard.yaml', 'stepUp: { challenge: passkey }', 'stepUp: { challenge: passkey }\nweights: { constructor: 5 }');
  t.deepEqual(
    compileCatalog(loadConfigDir(undeclared.dir)).problems.map((p) => `${p.path}: ${p.message}`),
    ['weights.constructor: weights.constructor names no signal declared in rules/signals.yaml'],
  );
});

test('a rule or a signal reading requestData.constructor reads the caller\'s key, absent when not sent', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.replace(
    'rules/standard.yaml',
    'stepUp: { challenge: passkey }',
    'stepUp: { challenge: passkey }\nrules:\n  - name: r\n    when: { fact: requestData.constructor, operator: exists, value: true }\n    then: { decision: deny, reason: r_deny }',
  );
  cfg.write('rules/signals.yaml', `${cfg.read('rules/signals.yaml')}  odd_constructor:\n    fact: requestData.constructor\n    transform: flag\n    missing: 0\n    equals: yes\n    weight: 40\n`);
  const offline = new OfflineEvaluator({ catalog: loadCatalog(cfg.dir) });
  const without = (await offline.evaluate(classified('internal'))).response;
  t.is(without.decision, 'allow');
  t.false(without.reasons.includes('odd_constructor'));
  const withKey = (await offline.evaluate({ ...classified('internal'), requestData: { constructor: 'yes' } })).response;
  t.is(withKey.decision, 'deny');
  t.true(withKey.reasons.includes('odd_constructor'));
});

test('a signal value that is not a number in 0..1 never reaches the score', (t) => {
  const botScore = compileSignal('automation_suspected', { fact: 'rawSignals.botScore', transform: 'clamp', weight: 15 } as never);
  const other = compileSignal('new_device', { fact: 'session.isNewDevice', transform: 'flag', weight: 10 } as never);
  const thresholds = { medium: 30, high: 60 };
  for (const botValue of [Number.NaN, Number.POSITIVE_INFINITY]) {
    const risk = assessRisk([botScore, other], { rawSignals: { botScore: botValue }, session: { isNewDevice: true } }, thresholds);
    t.is(risk.score, botValue === Number.POSITIVE_INFINITY ? 25 : 10, String(botValue));
    t.true(risk.contributions.every((c) => Number.isFinite(c.contribution)));
  }
});
