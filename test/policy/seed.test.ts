import test from 'ava';
import { runSeeds, seedFiles } from '../../src/cli/commands/seed.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import type { Database } from '../../src/store/db.js';
import { OperationStore } from '../../src/store/operationStore.js';
import { runCli } from '../helpers/cli.js';
import { openFreshStore, tempConfig } from '../helpers/config.js';
import { freshDatabase, REPO_ROOT } from '../helpers/tps.js';

// seeds/: the catalogue seed upserts operations and policy versions; the demo seed adds a history
// of real evaluations. Both can be rerun without duplicating anything.

const count = async (db: Database, table: string) => Number((await db.knex(table).count({ n: '*' }).first())!.n);

test('the seed files are knex seeds, run in order', (t) => {
  t.deepEqual(seedFiles(), ['01_catalog.ts', '02_demo_history.ts']);
});

for (const store of ['sqlite', 'postgres'] as const) {
  test.serial(`${store}: seeding twice stores everything once; a YAML change is upserted`, async (t) => {
    const { db, close } = await openFreshStore(store);
    const cfg = tempConfig({ fixtures: false });
    t.teardown(async () => {
      cfg.cleanup();
      await close();
    });
    const options = { configDir: cfg.dir, environment: 'demo', count: 400, endMs: Date.UTC(2025, 0, 8) };
    t.deepEqual(await runSeeds(db.knex, options), ['01_catalog.ts', '02_demo_history.ts']);
    const first = {
      operations: await new OperationStore(db.knex).list(),
      versions: await count(db, 'policy_versions'),
      events: await db.knex('events').select('telemetry_id', 'decision', 'score').orderBy('seq'),
    };
    t.is(first.operations.length, 5);
    t.is(first.versions, 5);
    t.is(first.events.length, 400);
    t.deepEqual([...new Set(first.events.map((e: { decision: string }) => e.decision))].sort(), ['allow', 'allow_redacted', 'deny', 'step_up_required', 'throttle']);
    const catalog = loadCatalog(cfg.dir);
    t.deepEqual(
      first.operations.map((o) => [o.key, o.policy_id, o.policy_version_id, o.mode]),
      [...catalog.operations.values()].sort((a, b) => a.key.localeCompare(b.key)).map((o) => [o.key, o.policyId, catalog.policies.get(o.policyId)!.versionId, 'enforce']),
    );

    await runSeeds(db.knex, options);
    t.deepEqual(await new OperationStore(db.knex).list(), first.operations);
    t.is(await count(db, 'policy_versions'), 5);
    t.deepEqual(await db.knex('events').select('telemetry_id', 'decision', 'score').orderBy('seq'), first.events);

    // Edit the YAML: one operation renamed in display, one removed, one policy changed.
    cfg.replace('operations/customer.create.yaml', 'displayName: Create customer', 'displayName: Create a customer');
    cfg.remove('operations/customer.read_pii.yaml');
    cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
    await runSeeds(db.knex, options, ['catalog']);
    const ops = await new OperationStore(db.knex).list();
    t.deepEqual(
      ops.map((o) => o.key),
      ['bank_account.update', 'customer.create', 'invoice.export', 'payment_transaction.create'],
    );
    t.is(ops.find((o) => o.key === 'customer.create')!.display_name, 'Create a customer');
    t.is(ops.find((o) => o.key === 'payment_transaction.create')!.policy_version_id, loadCatalog(cfg.dir).policies.get('payments')!.versionId);
    t.is(await count(db, 'policy_versions'), 6);
  });
}

test.serial('tps seed runs the seeds against DATABASE_URL and says what it did', async (t) => {
  const fresh = freshDatabase('sqlite');
  t.teardown(fresh.drop);
  const env = { DATABASE_URL: fresh.url, TPS_CONFIG_DIR: REPO_ROOT, TPS_ENVIRONMENT: 'demo' };
  const first = await runCli(['seed', '--events', '300'], env);
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout, /^catalog: 5 operations \(5 new, 0 changed, 0 removed, 0 unchanged\), 5 policy versions; configuration [0-9a-f]{16}\n/);
  t.regex(first.stdout, /\ndemo history: 300 events in "demo" \(.*\); 300 stored, 0 already there\n/);
  const again = await runCli(['seed', '--events', '300'], env);
  t.regex(again.stdout, /\(0 new, 0 changed, 0 removed, 5 unchanged\)/);
  t.regex(again.stdout, /0 stored, 300 already there/);
  const only = await runCli(['seed', '--only', 'catalog'], env);
  t.regex(only.stdout, /with 01_catalog\.ts\n$/);
  t.is((await runCli(['seed', '--events', 'many'], env)).code, 2);
});
