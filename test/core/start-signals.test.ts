import test from 'ava';
import { generateKey } from '../../src/auth/keys.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { openDatabase } from '../../src/store/db.js';
import { tempConfig } from '../helpers/config.js';
import { holdTable } from '../helpers/pgLock.js';
import { askEachWorker, logLines } from '../helpers/processes.js';
import { childrenOf, spawnServer } from '../helpers/script.js';
import { dropRedisPrefix, freshDatabase, REDIS_TEST_URL, unique } from '../helpers/tps.js';

// SIGHUP's default action ends a process. One sent while TPS starts (held here in its migrations,
// by a lock the test takes on knex's table) must not end it, and the reload it asks for happens
// once TPS is ready: start-up read the files before it opened the store, so they may have changed
// since. With TPS_WORKERS=2 the primary is the one held (it migrates); a worker handed what the
// primary read reloads once it listens.
const reloadAskedWhileStarting = test.macro(async (t, workers: number) => {
  const cfg = tempConfig({ fixtures: false });
  const database = freshDatabase('postgres');
  const redisPrefix = `tps-test:${unique()}:`;
  t.teardown(async () => {
    cfg.cleanup();
    await database.drop();
    await dropRedisPrefix(redisPrefix);
  });
  await (await openDatabase(database.url)).close();
  const schema = new URL(database.url).searchParams.get('schema')!;
  const migrations = await holdTable(t, `${schema}.knex_migrations`);
  const server = spawnServer({
    DATABASE_URL: database.url,
    TPS_CONFIG_DIR: cfg.dir,
    TPS_WATCH_CONFIG: 'false',
    TPS_WORKERS: String(workers),
    REDIS_URL: REDIS_TEST_URL,
    TPS_REDIS_PREFIX: redisPrefix,
    TPS_SECRET_KEY: generateKey('secret'),
    TPS_ENVIRONMENT: 'test',
  });
  t.teardown(() => server.stop('SIGKILL'));
  await migrations.waitedFor(server.exited);

  // An edit start-up has not seen, and the reload that asks for it.
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const edited = loadCatalog(cfg.dir).versionId;
  server.signal('SIGHUP');
  await migrations.release();

  // Each process that serves listens on the edit, or reloads to it once ready. (A worker that
  // asks the primary for its configuration after another has reloaded gets the edit at once.)
  await server.logged(new RegExp(`"configVersion":"${edited}"[^\\n]*"msg":"TPS listening"|"versionId":"${edited}"[^\\n]*"msg":"configuration reloaded"`, 'g'), workers);
  if (workers === 1) t.is(logLines(server.stdout, 'configuration reloaded').length, 1);
  const port = Number(new URL(logLines(server.stdout, 'TPS listening')[0]!.url).port);
  // Asked until each serving process has answered: a few requests could all reach one worker.
  const serving = workers === 1 ? [server.pid] : childrenOf(server.pid);
  for (const answer of await askEachWorker(port, '/readyz', serving)) t.is(answer.body.configuration.versionId, edited);
  t.is(await server.stop('SIGTERM'), 0);
});

test('SIGHUP while TPS starts does not end it, and reloads the configuration once it is ready', reloadAskedWhileStarting, 1);
test('TPS_WORKERS=2: SIGHUP while the primary prepares the store does not end it, and every worker serves the edit it asked for', reloadAskedWhileStarting, 2);
