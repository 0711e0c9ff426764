import type { ExecutionContext } from 'ava';
import test from 'ava';
import { generateKey } from '../../src/auth/keys.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { openDatabase } from '../../src/store/db.js';
import { samples } from '../core/evaluate-suite.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { holdTable } from '../helpers/pgLock.js';
import { askEachWorker, logLines } from '../helpers/processes.js';
import { childrenOf, spawnServer, type ScriptProcess } from '../helpers/script.js';
import { dropRedisPrefix, freshDatabase, post, REDIS_TEST_URL, unique, type StoreKind } from '../helpers/tps.js';

// TPS_WORKERS=2 after its first start (src/cluster/primary.ts): a worker that dies is replaced by
// one that starts from the configuration the others serve, not from the files (configRelay.ts); a
// replacement that cannot start is tried again while the other serves; SIGHUP goes to listening
// workers only, and one still starting reloads once it listens.

/** Two workers on a copy of the configuration, TPS_WATCH_CONFIG=false, listening; everything dropped after the test. */
async function twoWorkers(t: ExecutionContext, store: StoreKind) {
  const cfg = tempConfig({ fixtures: false });
  const database = freshDatabase(store);
  const redisPrefix = `tps-test:${unique()}:`;
  t.teardown(async () => {
    cfg.cleanup();
    await database.drop();
    await dropRedisPrefix(redisPrefix);
  });
  const secretKey = generateKey('secret');
  const server = spawnServer({
    TPS_WORKERS: '2',
    TPS_CONFIG_DIR: cfg.dir,
    TPS_WATCH_CONFIG: 'false',
    DATABASE_URL: database.url,
    REDIS_URL: REDIS_TEST_URL,
    TPS_REDIS_PREFIX: redisPrefix,
    TPS_SECRET_KEY: secretKey,
    TPS_ENVIRONMENT: 'test',
  });
  t.teardown(() => server.stop('SIGKILL'));
  const port = await server.loggedPort('TPS workers listening');
  await server.logged(/"msg":"TPS listening"/g, 2);
  return { server, cfg, database, secretKey, port, serving: loadCatalog(cfg.dir).versionId };
}

/** Kills one worker and waits until its replacement listens (its own `TPS listening`, the third). */
async function replaceOne(server: ScriptProcess): Promise<void> {
  process.kill(childrenOf(server.pid)[0]!, 'SIGKILL');
  await server.logged(/"msg":"TPS listening"/g, 3);
}

/** What /readyz says of the configuration version, asked until each of the primary's workers has answered. */
async function versionsServed(server: ScriptProcess, port: number): Promise<Set<string>> {
  const answers = await askEachWorker(port, '/readyz', childrenOf(server.pid));
  return new Set(answers.map((a) => a.body.configuration.versionId));
}

test('TPS_WORKERS=2: after both workers refused an invalid edit, a worker that dies is replaced by one serving their configuration', async (t) => {
  const { server, cfg, port, serving } = await twoWorkers(t, 'sqlite');
  cfg.write('rules/payments.yaml', 'id: payments\nrules: [\n');
  server.signal('SIGHUP');
  await server.logged(/"msg":"configuration reload refused/g, 2);
  // A replacement reading the files could not start, and its failure stopped the whole service.
  await replaceOne(server);
  t.deepEqual(
    logLines(server.stdout, 'TPS listening').map((l) => l.configVersion),
    [serving, serving, serving],
  );
  t.is(childrenOf(server.pid).length, 2);
  t.deepEqual(await versionsServed(server, port), new Set([serving]));
  t.is(await server.stop('SIGTERM'), 0);
});

test('TPS_WORKERS=2, TPS_WATCH_CONFIG=false: a worker replaced after the files changed serves what the others serve until SIGHUP', async (t) => {
  const { server, cfg, port, serving } = await twoWorkers(t, 'sqlite');
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const edited = loadCatalog(cfg.dir).versionId;
  await replaceOne(server);
  // Reading the files, it would have started on the edit the others never reloaded.
  t.deepEqual(
    logLines(server.stdout, 'TPS listening').map((l) => l.configVersion),
    [serving, serving, serving],
  );
  t.deepEqual(await versionsServed(server, port), new Set([serving]));
  server.signal('SIGHUP');
  await server.logged(/"msg":"configuration reloaded"/g, 2);
  t.deepEqual(await versionsServed(server, port), new Set([edited]));
  t.is(await server.stop('SIGTERM'), 0);
});

test('TPS_WORKERS=2: a replacement that cannot start is tried again, 1 s then 2 s later, while the other worker serves', async (t) => {
  const { server, database, port, secretKey } = await twoWorkers(t, 'sqlite');
  const db = await openDatabase(database.url, { migrate: false, checkpoint: false });
  t.teardown(() => db.close());
  // A starting worker records its policy versions: with their table away, its start fails.
  await db.knex.schema.renameTable('policy_versions', 'policy_versions_away');
  process.kill(childrenOf(server.pid)[0]!, 'SIGKILL');
  await server.logged(/"msg":"a replacement TPS worker failed to start; trying again"/g, 2);
  t.deepEqual(
    logLines(server.stdout, 'a replacement TPS worker failed to start; trying again')
      .slice(0, 2)
      .map((l) => [l.code, l.retryInMs]),
    [
      [1, 1000],
      [1, 2000],
    ],
  );
  const answer = await post(`http://127.0.0.1:${port}/api/evaluate`, samples.createCustomer(), secretKey);
  t.is(answer.status, 200);

  await db.knex.schema.renameTable('policy_versions_away', 'policy_versions');
  await server.logged(/"msg":"TPS listening"/g, 3);
  t.is(childrenOf(server.pid).length, 2);
  t.is(await server.stop('SIGTERM'), 0);
});

test('TPS_WORKERS=2: SIGHUP while a replacement starts reloads the listening worker, and the replacement once it listens', async (t) => {
  const { server, cfg, database, port } = await twoWorkers(t, 'postgres');
  const schema = new URL(database.url).searchParams.get('schema')!;
  // The replacement waits at its start for this table (it records its policy versions there).
  const versions = await holdTable(t, `${schema}.policy_versions`);
  process.kill(childrenOf(server.pid)[0]!, 'SIGKILL');
  await versions.waitedFor(server.exited);
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const edited = loadCatalog(cfg.dir).versionId;
  // Passed on to the replacement too, it would end it (and its failure, the service).
  server.signal('SIGHUP');
  await versions.release();

  await server.logged(/"msg":"TPS listening"/g, 3);
  await server.logged(/"msg":"configuration reloaded"/g, 2);
  t.deepEqual(
    logLines(server.stdout, 'configuration reloaded').map((l) => l.versionId),
    [edited, edited],
  );
  t.is(logLines(server.stdout, 'a TPS worker started during a reload; it reloads now').length, 1);
  t.deepEqual(await versionsServed(server, port), new Set([edited]));
  t.is(await server.stop('SIGTERM'), 0);
});
