// Configuration that validated but could never work as written: a signal held to no fact type
// (a `PII` map key on the lower-cased classification never fires), an operation key no request can
// send, and a custom rule named like a built-in one, which explanations could not tell apart.
import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { policyVersion, readyzUntil } from '../helpers/readyz.js';
import { post, startTps } from '../helpers/tps.js';

const SAMPLE_MAP = 'values: { pii: 0.6, restricted: 0.8, critical: 1 }';
/** SPEC 2.1's spelling of the classification, which TPS lower-cases before any signal reads it. */
const UPPER_MAP = 'values: { PII: 0.6, restricted: 0.8, critical: 1 }';

const addSignals = (cfg: TempConfig, yaml: string) => cfg.write('rules/signals.yaml', `${cfg.read('rules/signals.yaml')}${yaml}`);

/** `tps validate DIR` in a process of its own: its exit code and the problem lines it prints, paths relative to DIR. */
async function validate(cfg: TempConfig) {
  const res = await runTps(['validate', cfg.dir]);
  const lines = res.stderr
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.trim().replace(`${cfg.dir}/`, ''));
  return { code: res.code, lines, output: res.stdout + res.stderr };
}

test('tps validate refuses a signal that could never read its fact as written, at the line and key at fault', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.replace('rules/signals.yaml', SAMPLE_MAP, UPPER_MAP);
  addSignals(
    cfg,
    [
      '  geo_changed_text:',
      '    fact: session.geoChanged',
      '    transform: flag',
      '    equals: "true"',
      '    weight: 10',
      '  late_hour_flag:',
      '    fact: metadata.localHour',
      '    transform: flag',
      '    range: [0, 5]',
      '    weight: 5',
      '  roles_ramp:',
      '    fact: actor.roles',
      '    transform: ramp',
      '    range: [1, 3]',
      '    weight: 5',
      '  bot_clamp:',
      '    fact: rawSignals.botScore',
      '    transform: clamp',
      '    equals: 1',
      '    weight: 5',
      '',
    ].join('\n'),
  );
  const res = await validate(cfg);
  t.is(res.code, 1, res.output);
  const signalLines = res.lines.filter((l) => l.startsWith('rules/signals.yaml'));
  t.deepEqual(signalLines, [
    'rules/signals.yaml:83 at signals.sensitive_resource.values.PII: values.PII can never match: resource.classification is always lower-case, never "PII"; write "pii"',
    'rules/signals.yaml:93 at signals.geo_changed_text.equals: equals can never match: session.geoChanged is true or false, never "true"',
    'rules/signals.yaml:97 at signals.late_hour_flag.transform: transform flag without equals compares metadata.localHour with true, and it is a number, never true: it can never fire; write equals, or use between or ramp for a range',
    "rules/signals.yaml:98 at signals.late_hour_flag.range: range is only for transforms ramp and between; this signal's transform is flag",
    'rules/signals.yaml:102 at signals.roles_ramp.transform: transform ramp reads a number, and actor.roles is a list: the signal would always be its missing value (0); use nonEmpty',
    "rules/signals.yaml:108 at signals.bot_clamp.equals: equals is only for transform flag; this signal's transform is clamp",
  ]);

  // Written as the messages say, the same signals validate.
  cfg.replace('rules/signals.yaml', UPPER_MAP, SAMPLE_MAP);
  cfg.replace('rules/signals.yaml', 'equals: "true"', 'equals: true');
  cfg.replace('rules/signals.yaml', '    transform: flag\n    range: [0, 5]', '    transform: between\n    range: [0, 5]');
  cfg.replace('rules/signals.yaml', '    transform: ramp\n    range: [1, 3]', '    transform: nonEmpty');
  cfg.replace('rules/signals.yaml', '    equals: 1\n', '');
  const ok = await validate(cfg);
  t.is(ok.code, 0, ok.output);
});

test('a reload that keys a map signal PII is refused over HTTP, and the served signal keeps firing for classification "PII"', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_DEBOUNCE_MS: '20' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const request = {
    operationKey: 'customer.create',
    actor: { id: 'u-1', authenticated: true, roles: ['support'] },
    resource: { type: 'customer', id: 'c-1', classification: 'PII' },
    session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  };
  const before = await post(`${tps.url}/api/evaluate`, request, tps.secretKey);
  t.is(before.status, 200);
  t.true(before.body.reasons.includes('sensitive_resource'), JSON.stringify(before.body));
  const served = policyVersion(await readyzUntil(tps.url, () => true), 'standard');

  // Keyed as SPEC 2.1 spells it, the signal would never fire: refused, the served version stays.
  cfg.replace('rules/signals.yaml', SAMPLE_MAP, UPPER_MAP);
  const ready = await readyzUntil(tps.url, (b) => b.configuration.lastReload.status !== 'ok' || policyVersion(b, 'standard') !== served);
  t.is(ready.configuration.lastReload.status, 'rejected', JSON.stringify(ready.configuration));
  // (A signals file with a problem is not loaded, so a policy's weights also name no signal.)
  const problem = ready.configuration.lastReload.problems.find((p: { file: string }) => p.file.endsWith('rules/signals.yaml'));
  t.like(problem, { line: 83, path: 'signals.sensitive_resource.values.PII' });
  t.is(policyVersion(ready, 'standard'), served);
  const after = await post(`${tps.url}/api/evaluate`, request, tps.secretKey);
  t.is(after.status, 200);
  t.true(after.body.reasons.includes('sensitive_resource'), JSON.stringify(after.body));
});

test('tps validate refuses an operation key longer than an evaluate request may send', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  const key = (length: number) => `customer.${'a'.repeat(length - 'customer.'.length)}`;
  cfg.replace('operations/customer.create.yaml', 'key: customer.create', `key: ${key(129)}`);
  const res = await validate(cfg);
  t.is(res.code, 1, res.output);
  t.deepEqual(res.lines, ['operations/customer.create.yaml:1 at key: key must be at most 128 characters, the longest operationKey a request may send']);

  cfg.replace('operations/customer.create.yaml', key(129), key(128));
  const ok = await validate(cfg);
  t.is(ok.code, 0, ok.output);
});

test("tps validate refuses a custom rule named like a built-in rule, whose explanations and firedRules could not be told apart", async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.replace('rules/payments.yaml', 'name: step-up-large-payment', 'name: score-deny');
  const res = await validate(cfg);
  t.is(res.code, 1, res.output);
  t.deepEqual(res.lines, [
    'rules/payments.yaml:11 at rules[0].name: rule name "score-deny" is a built-in rule\'s (require-roles, require-recent-human-signal, caller-velocity-limit, service-velocity-limit, score-deny, score-step-up); choose another',
  ]);
});
