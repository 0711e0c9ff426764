import test from 'ava';
import yaml from 'js-yaml';
import { runSeeds } from '../../src/cli/commands/seed.js';
import type { CaseSpec } from '../../src/fixtures/format.js';
import { runFixtures } from '../../src/fixtures/suite.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { eventToFixtureCase, fixtureCaseYaml } from '../../src/replay/toFixture.js';
import { fromRow, type EventRow } from '../../src/store/eventStore.js';
import { runCli } from '../helpers/cli.js';
import { openFreshStore, tempConfig } from '../helpers/config.js';
import { post, REPO_ROOT, startTps } from '../helpers/tps.js';

// `tps events to-fixture`: a stored event becomes a fixture case that passes against the policy
// that decided it — every decision, and step-up retries that passed, failed or were invalid.

const policyFileOf: Record<string, string> = {
  'customer.create': 'standard',
  'bank_account.update': 'bank-account-change',
  'invoice.export': 'finance-export',
  'payment_transaction.create': 'payments',
  'customer.read_pii': 'pii-read',
};

function writeCases(cfg: ReturnType<typeof tempConfig>, cases: CaseSpec[]) {
  const byFile = new Map<string, CaseSpec[]>();
  for (const c of cases) byFile.set(policyFileOf[c.operation!]!, [...(byFile.get(policyFileOf[c.operation!]!) ?? []), c]);
  for (const [file, list] of byFile) cfg.write(`rules/${file}.fixtures.yaml`, `cases:\n${list.map((c) => fixtureCaseYaml(c)).join('')}`);
}

test.serial('every kind of demo event round-trips into a passing fixture case', async (t) => {
  const { db, close } = await openFreshStore('sqlite');
  const cfg = tempConfig({ fixtures: false });
  t.teardown(async () => {
    cfg.cleanup();
    await close();
  });
  await runSeeds(db.knex, { configDir: REPO_ROOT, environment: 'test', count: 1200, endMs: Date.UTC(2025, 0, 8) }, ['demo']);
  const events = ((await db.knex('events').orderBy('seq')) as EventRow[]).map(fromRow);
  // A few of each (operation, decision, retry outcome): all decisions, retries, TPS throttles.
  const kinds = new Map<string, number>();
  const chosen = events.filter((e) => {
    const kind = `${e.operationKey}/${e.decision}/${e.explanation.challengeResult ?? '-'}/${e.reasons.includes('service_velocity_limit_exceeded')}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    return kinds.get(kind)! <= 3;
  });
  const seen = (pred: (e: (typeof events)[number]) => boolean) => chosen.some(pred);
  for (const d of ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny']) t.true(seen((e) => e.decision === d), d);
  for (const k of ['satisfied', 'failed']) t.true(seen((e) => e.explanation.challengeResult === k), k);
  t.true(seen((e) => e.reasons.includes('service_velocity_limit_exceeded')));

  const catalog = loadCatalog(cfg.dir);
  writeCases(cfg, chosen.map((e) => eventToFixtureCase(e, catalog)));
  const run = await runFixtures(cfg.dir);
  t.deepEqual(run.problems, []);
  t.is(run.results.length, chosen.length);
  const failed = run.results.filter((r) => !r.ok);
  t.deepEqual(failed.map((r) => `${r.name}: ${r.steps.flatMap((s) => s.mismatches).join('; ')}`), []);
});

test.serial('tps events to-fixture turns an event the server recorded into a case that passes', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const request = {
    operationKey: 'payment_transaction.create',
    actor: { id: 'fin-9', authenticated: true, roles: ['finance'] },
    resource: { type: 'payment_method', id: 'pm-9' },
    requestData: { amount: 12500, currency: 'EUR' },
    session: { sessionId: 's-9', continuityStrength: 0.9, recentHumanSignalAt: new Date(Date.now() - 30_000).toISOString() },
    metadata: { notes: 'quarterly supplier run' },
  };
  const first = await post(`${tps.url}/api/evaluate`, request, tps.secretKey);
  t.is(first.body.decision, 'step_up_required');
  const retry = await post(`${tps.url}/api/evaluate`, { ...request, metadata: { proofToken: 'tok' }, challengeResult: { type: 'proof_token', passed: true } }, tps.secretKey);
  t.is(retry.body.decision, 'allow');

  for (const [id, decision] of [
    [first.body.telemetryId, 'step_up_required'],
    [retry.body.telemetryId, 'allow'],
  ] as const) {
    const out = await runCli(['events', 'to-fixture', id, cfg.dir, '--name', `incident ${decision}`], { DATABASE_URL: tps.databaseUrl });
    t.is(out.code, 0, out.stderr);
    t.regex(out.stdout, new RegExp(`^# from event ${id} \\(test, `));
    const [c] = yaml.load(out.stdout) as CaseSpec[];
    t.is(c!.name, `incident ${decision}`);
    t.is(c!.operation, 'payment_transaction.create');
    // The free-text note never reached the event, so it is not in the fixture either.
    t.false(out.stdout.includes('quarterly'));
    cfg.write('rules/payments.fixtures.yaml', `cases:\n${out.stdout.split('\n').filter((l) => !l.startsWith('#')).join('\n')}\n`);
    const run = await runFixtures(cfg.dir);
    t.deepEqual(run.problems, []);
    t.deepEqual(run.results.map((r) => [r.name, r.ok, r.steps.flatMap((s) => s.mismatches)]), [[`incident ${decision}`, true, []]]);
  }
  t.is((await runCli(['events', 'to-fixture', 'no-such-id', cfg.dir], { DATABASE_URL: tps.databaseUrl })).code, 1);
});
