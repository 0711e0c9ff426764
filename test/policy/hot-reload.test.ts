import fs from 'node:fs';
import test from 'ava';
import { createTps } from '../../src/app.js';
import { readSettings } from '../../src/config/env.js';
import type { AdvisoryInput, AdvisoryPort } from '../../src/evaluate/advisory.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { financePayment } from '../helpers/payments.js';
import { policyVersion, readyzUntil } from '../helpers/readyz.js';
import { runningServer } from '../helpers/script.js';
import { freshDatabase, get, post, startTps } from '../helpers/tps.js';

// Hot reload: a valid edit is compiled to the side and swapped in; an invalid one keeps the last
// good configuration serving and shows its problems on /readyz; evaluations in flight finish on the
// version they started with; under load, no request fails during a swap.


const versionOf = (cfg: TempConfig, policy: string) => loadCatalog(cfg.dir).policies.get(policy)!.versionId;

test('a valid edit takes effect without a restart; an invalid one keeps the old version serving', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_DEBOUNCE_MS: '20' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const before = versionOf(cfg, 'payments');
  const a = await post(`${tps.url}/api/evaluate`, financePayment(7000), tps.secretKey);
  t.is(a.body.decision, 'allow');
  t.is(a.body.policyVersionId, before);

  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const after = versionOf(cfg, 'payments');
  const ready = await readyzUntil(tps.url, (b) => policyVersion(b, 'payments') === after);
  t.deepEqual(ready.configuration.lastReload, { status: 'ok' });
  const b = await post(`${tps.url}/api/evaluate`, financePayment(7000), tps.secretKey);
  t.is(b.body.decision, 'step_up_required');
  t.is(b.body.policyVersionId, after);
  // The new version is remembered, so its events can be explained later.
  t.truthy(await tps.tps.policyVersions.get(after));

  // An invalid edit: refused, every problem located on /readyz, the last good version serves on.
  cfg.write('rules/payments.yaml', cfg.read('rules/payments.yaml').replace('thresholds: { medium: 30, high: 60, stepUp: 60, deny: 85 }', 'thresholds: { medium: 30, high: 60, stepUp: 600, deny: 85 }\nthrotle: {}'));
  const refused = await readyzUntil(tps.url, (body) => body.configuration.lastReload.status === 'rejected');
  t.is(refused.status, 'ready');
  t.deepEqual(
    refused.configuration.lastReload.problems.map((p: any) => `${p.file.endsWith('rules/payments.yaml')}:${p.line} ${p.path}: ${p.message}`),
    ['true:3 thresholds.stepUp: thresholds.stepUp must be between 0 and 100', 'true:4 throtle: throtle is not a known field (did you mean "throttle"?)'],
  );
  t.is(policyVersion(refused, 'payments'), after);
  const c = await post(`${tps.url}/api/evaluate`, financePayment(7000), tps.secretKey);
  t.is(c.status, 200);
  t.is(c.body.decision, 'step_up_required');
  t.is(c.body.policyVersionId, after);

  // Fixing the file clears the problems.
  cfg.replace('rules/payments.yaml', 'stepUp: 600, deny: 85 }\nthrotle: {}', 'stepUp: 60, deny: 85 }');
  const fixed = await readyzUntil(tps.url, (body) => body.configuration.lastReload.status === 'ok');
  t.is(policyVersion(fixed, 'payments'), after);
});

test('evaluations in flight finish on the version they started with', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const db = freshDatabase('sqlite');
  let release!: () => void;
  let entered!: (versionId: string) => void;
  const inAdvisor = new Promise<string>((r) => (entered = r));
  const gate = new Promise<void>((r) => (release = r));
  // The advisory stage sits between risk scoring and the policy run: holding it there holds an
  // evaluation mid-way while the configuration is swapped under it.
  const advisor: AdvisoryPort = {
    async assess({ policy }: AdvisoryInput) {
      entered(policy.versionId);
      await gate;
      return undefined;
    },
  };
  const tps = await createTps(readSettings({ DATABASE_URL: db.url, TPS_CONFIG_DIR: cfg.dir, TPS_ENVIRONMENT: 'test', LOG_LEVEL: 'silent', TPS_WATCH_CONFIG: 'false' }), { advisor });
  t.teardown(async () => {
    await tps.close();
    await db.drop();
    cfg.cleanup();
  });
  const before = versionOf(cfg, 'payments');
  const inFlight = tps.evaluator!.evaluate('test', financePayment(7000));
  t.is(await inAdvisor, before);

  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const reload = await tps.reloadConfig('SIGHUP');
  t.true(reload.ok && reload.changed);
  t.is(tps.config.current().policies.get('payments')!.versionId, versionOf(cfg, 'payments'));

  release();
  const { response } = await inFlight;
  t.is(response.policyVersionId, before);
  t.is(response.decision, 'allow');
  const next = await tps.evaluator!.evaluate('test', financePayment(7000));
  t.is(next.response.policyVersionId, versionOf(cfg, 'payments'));
  t.is(next.response.decision, 'step_up_required');
});

test('an edit of any field an answer carries moves the configuration version: a resourceType alone is a reload that changed something', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const versionBefore = (await get(`${tps.url}/readyz`)).body.configuration.versionId;
  const evaluate = () => post(`${tps.url}/api/evaluate`, { ...financePayment(50), operationKey: 'bank_account.update', resource: { type: 'account', id: 'acc-1' } }, tps.secretKey);
  t.is((await evaluate()).body.resourceType, 'account');

  cfg.replace('operations/bank_account.update.yaml', 'resourceType: account', 'resourceType: bank_account');
  const reload = await tps.tps.reloadConfig('SIGHUP');
  t.true(reload.ok);
  t.true(reload.changed, 'a reload that swapped in a new resourceType said nothing changed');
  t.not(reload.versionId, versionBefore);
  t.is((await get(`${tps.url}/readyz`)).body.configuration.versionId, reload.versionId);
  t.is((await evaluate()).body.resourceType, 'bank_account');

  // Moving an operation to another file changes nothing it answers, so not the version either.
  cfg.write('operations/bank_account.update.moved.yaml', cfg.read('operations/bank_account.update.yaml'));
  fs.rmSync(cfg.path('operations/bank_account.update.yaml'));
  const moved = await tps.tps.reloadConfig('SIGHUP');
  t.true(moved.ok);
  t.false(moved.changed);
  t.is(moved.versionId, reload.versionId);
});

test('under a load of concurrent requests, no request fails while the configuration is swapped', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_DEBOUNCE_MS: '5' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const original = cfg.read('rules/payments.yaml');
  const edited = original.replace('value: 10000', 'value: 5000');
  const versions = { [versionOf(cfg, 'payments')]: 'allow' };
  cfg.write('rules/payments.yaml', edited);
  versions[versionOf(cfg, 'payments')] = 'step_up_required';
  cfg.write('rules/payments.yaml', original);

  let stop = false;
  const seen: { status: number; version?: string; decision?: string }[] = [];
  const worker = async (w: number) => {
    // Bounded: a worker stops when the swaps are done, or after 400 requests whatever happens.
    for (let i = 0; !stop && i < 400; i++) {
      const r = await post(`${tps.url}/api/evaluate`, { ...financePayment(7000), actor: { id: `fin-${w}-${i}`, authenticated: true, roles: ['finance'] } }, tps.secretKey);
      seen.push({ status: r.status, version: r.body?.policyVersionId, decision: r.body?.decision });
    }
  };
  const workers = Array.from({ length: 12 }, (_, w) => worker(w));

  let swaps = 0;
  for (let i = 0; i < 10; i++) {
    const text = i % 2 === 0 ? edited : original;
    cfg.write('rules/payments.yaml', text);
    // Half the swaps come from the file watcher, half from an explicit reload (as SIGHUP does).
    if (i % 4 === 1) await tps.tps.reloadConfig('SIGHUP');
    const want = versionOf(cfg, 'payments');
    await readyzUntil(tps.url, (b) => policyVersion(b, 'payments') === want);
    swaps++;
  }
  stop = true;
  await Promise.all(workers);

  t.is(swaps, 10);
  t.true(seen.length >= 12, `requests: ${seen.length}`);
  t.deepEqual(seen.filter((r) => r.status !== 200), []);
  // Every answer came from one whole version, and decided as that version does.
  t.deepEqual(seen.filter((r) => versions[r.version!] !== r.decision), []);
});

test.serial('the server process reloads on SIGHUP', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const db = freshDatabase('sqlite');
  t.teardown(async () => {
    await db.drop();
    cfg.cleanup();
  });
  const server = await runningServer({ DATABASE_URL: db.url, TPS_CONFIG_DIR: cfg.dir, TPS_WATCH_CONFIG: 'false', TPS_ENVIRONMENT: 'test', TPS_WORKERS: '1' });
  t.teardown(() => server.stop());
  const url = `http://127.0.0.1:${server.port}`;
  const before = policyVersion((await get(`${url}/readyz`)).body, 'payments');
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  server.signal('SIGHUP');
  await server.logged(/"msg":"configuration reloaded"/);
  const after = policyVersion((await get(`${url}/readyz`)).body, 'payments');
  t.not(after, before);
  t.is(after, versionOf(cfg, 'payments'));
});

test('a reload the store cannot record is refused, and /readyz says so until one succeeds', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const before = versionOf(cfg, 'payments');
  // The store cannot remember the new policy version: a real failure of the reload's write.
  await tps.tps.db.knex.schema.renameTable('policy_versions', 'policy_versions_away');
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const failed = await tps.tps.reloadConfig('SIGHUP');
  t.false(failed.ok);
  const refused = (await get(`${tps.url}/readyz`)).body;
  t.is(refused.configuration.lastReload.status, 'rejected');
  t.regex(refused.configuration.lastReload.problems[0].message, /^reload failed: /);
  t.is(policyVersion(refused, 'payments'), before);
  const still = await post(`${tps.url}/api/evaluate`, financePayment(7000), tps.secretKey);
  t.is(still.body.policyVersionId, before);
  t.is(still.body.decision, 'allow');

  await tps.tps.db.knex.schema.renameTable('policy_versions_away', 'policy_versions');
  t.true((await tps.tps.reloadConfig('SIGHUP')).ok);
  const fixed = (await get(`${tps.url}/readyz`)).body;
  t.deepEqual(fixed.configuration.lastReload, { status: 'ok' });
  t.is(policyVersion(fixed, 'payments'), versionOf(cfg, 'payments'));
});
