import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import { parseMetrics, sumOf } from '../../bench/serverMetrics.js';
import { generateKey } from '../../src/auth/keys.js';
import { THREAD_NAME } from '../../src/evaluate/thread.js';
import { openDatabase } from '../../src/store/db.js';
import { samples } from '../core/evaluate-suite.js';
import { allowedCpus, childrenOf, runningServer, startServer, threadNames, type Placement } from '../helpers/script.js';
import { dropRedisPrefix, freshDatabase, REDIS_TEST_URL, REPO_ROOT, unique, type StoreKind } from '../helpers/tps.js';

// TPS_WORKERS=N: the real server (src/server.ts) started as its own process, as `npm start` does,
// on the port the system gives it (PORT=0), which the primary logs once every worker listens.

/** One request on a connection of its own, so the cluster may hand it to any worker. */
function post(port: number, body: unknown, key: string, route = '/api/evaluate'): Promise<{ status: number; body: any; timing?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: route, method: 'POST', agent: false, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } },
      (res) => void text(res).then((body) => resolve({ status: res.statusCode!, body: JSON.parse(body), timing: res.headers['server-timing'] as string | undefined }), reject),
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** A GET on a connection of its own, as post() does. */
function getText(port: number, route: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: route, agent: false }, (res) => void text(res).then(resolve, reject)).on('error', reject);
  });
}

async function text(res: http.IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of res) body += (chunk as Buffer).toString();
  return body;
}

test('several workers need REDIS_URL, and say so instead of starting', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-cluster-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const server = await startServer({ TPS_WORKERS: '2', TPS_CONFIG_DIR: REPO_ROOT, DATABASE_URL: `sqlite:${path.join(dir, 'tps.sqlite')}` });
  t.is(server.code, 1);
  t.regex(server.stderr, /TPS_WORKERS=2 needs REDIS_URL/);
});

/**
 * TPS_WORKERS=2 on a store and a Redis prefix of its own, each dropped after the test, with `env`
 * over the rest, placed as runningServer takes it.
 */
async function twoWorkers(t: ExecutionContext, store: StoreKind, env: Record<string, string> = {}, place?: Placement) {
  const database = freshDatabase(store);
  const redisPrefix = `tps-test:${unique()}:`;
  t.teardown(async () => {
    await database.drop();
    await dropRedisPrefix(redisPrefix);
  });
  const secretKey = generateKey('secret');
  const environment = `cluster-${crypto.randomBytes(4).toString('hex')}`;
  const server = await runningServer(
    {
      TPS_WORKERS: '2',
      TPS_CONFIG_DIR: REPO_ROOT,
      DATABASE_URL: database.url,
      REDIS_URL: REDIS_TEST_URL,
      TPS_REDIS_PREFIX: redisPrefix,
      TPS_SECRET_KEY: secretKey,
      TPS_ENVIRONMENT: environment,
      ...env,
    },
    place,
  );
  t.teardown(() => server.stop('SIGKILL'));
  return { server, database, redisPrefix, secretKey, environment };
}

// With SQLite the primary commits every worker's events, as the file's one writer; with PostgreSQL
// each worker commits its own.
const servesFromTwoWorkers = test.macro(async (t, store: StoreKind) => {
  const { server, database, redisPrefix, secretKey, environment } = await twoWorkers(t, store, {
    TPS_SERVER_TIMING: 'true',
    // A WAL this small makes the primary, SQLite's writer, catch up within a few commits.
    TPS_SQLITE_WAL_MB: '0.05',
  });
  // Both workers listen on the one port, as the primary says once they all do.
  const port = await server.loggedPort('TPS workers listening');
  t.is(port, server.port);
  t.is(childrenOf(server.pid).length, 2);

  // A step-up and its retry on separate connections: whichever worker takes the retry finds the
  // challenge, because challenges live in Redis.
  const transaction = {
    operationKey: 'bank_account.update',
    actor: { id: 'u-cluster', authenticated: true },
    resource: { type: 'account', id: `acct-${crypto.randomUUID()}` },
    session: { sessionId: 's-cluster', continuityStrength: 0.9 },
  };
  let evaluations = 0;
  const redis = new Redis(REDIS_TEST_URL);
  t.teardown(() => redis.disconnect());
  for (let round = 0; round < 4; round++) {
    const first = await post(port, { ...transaction, resource: { ...transaction.resource, id: `${transaction.resource.id}-${round}` } }, secretKey);
    t.is(first.status, 200);
    t.is(first.body.decision, 'step_up_required');
    // The open challenge sits under TPS_REDIS_PREFIX (which the teardown drops).
    t.true((await redis.keys(`${redisPrefix}ch:*`)).length > 0);
    const retry = await post(port, { ...transaction, resource: { ...transaction.resource, id: `${transaction.resource.id}-${round}` }, challengeResult: { type: 'passkey', passed: true } }, secretKey);
    t.is(retry.status, 200);
    t.is(retry.body.decision, 'allow');
    t.true(retry.body.reasons.includes('challenge_satisfied'));
    evaluations += 2;
  }
  const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => post(port, { operationKey: 'customer.create', actor: { id: `u${i}` }, resource: { type: 'customer', id: `c${i}` } }, secretKey)));
  t.true(burst.every((r) => r.status === 200));
  // Each answer waited for its commit; no worker checkpoints a SQLite file (the primary does), so
  // none says how long a checkpoint of its own ran beside that wait.
  t.true(burst.every((r) => /\bcommit;dur=/.test(r.timing ?? '') && !/\bbulk;dur=/.test(r.timing ?? '')), burst[0]!.timing);
  evaluations += burst.length;

  // With SQLite, ingest commits through the primary too, which hands back the stored row of a taken
  // telemetryId (its explanation a Buffer) for the worker to compare: a repeat is a duplicate,
  // other content a conflict.
  const record = {
    telemetryId: `ing-${crypto.randomUUID()}`,
    operationKey: 'invoice.export',
    actorId: 'u-ingest',
    resourceType: 'invoice',
    resourceId: 'inv-1',
    requestSummary: { requestedCount: 1200 },
    decision: 'deny',
    score: 72.5,
    reasons: ['bulk_or_export_volume'],
    normalizedSignals: { bulk_or_export_volume: 0.8 },
  };
  const ingested = await post(port, record, secretKey, '/api/events/ingest');
  t.is(ingested.status, 201);
  for (let i = 0; i < 4; i++) {
    const repeat = await post(port, record, secretKey, '/api/events/ingest');
    t.is(repeat.status, 200);
    t.true(repeat.body.duplicate);
    const other = await post(port, { ...record, score: 10 }, secretKey, '/api/events/ingest');
    t.is(other.status, 409);
    t.is(other.body.error.code, 'telemetry_id_conflict');
  }

  // /metrics is the whole service's whichever worker answers: the primary gathers every worker's
  // (src/cluster/metrics.ts). So the decisions it counts are every evaluation answered, by both
  // workers, in each scrape alike. Who commits each worker's events: with SQLite the primary
  // (src/server.ts hands the workers committedByPrimary; test/cluster/event-commits.test.ts tests
  // the mechanism itself), with PostgreSQL the worker: one process's word, not a sum.
  const [writer, other] = store === 'sqlite' ? ['primary', 'self'] : ['self', 'primary'];
  for (let i = 0; i < 3; i++) {
    const text = await getText(port, '/metrics');
    t.is(sumOf(parseMetrics(text), 'tps_decisions_total'), evaluations);
    t.regex(text, new RegExp(`^tps_event_writer\\{writer="${writer}"\\} 1$`, 'm'));
    t.notRegex(text, new RegExp(`^tps_event_writer\\{writer="${other}"\\}`, 'm'));
    t.regex(text, /^tps_evaluation_thread [01]$/m);
    // No one process's start time: what tells the benchmark a scrape is the whole service's.
    t.notRegex(text, /^tps_process_start_time_seconds/m);
  }
  // The primary's own metrics are in them too: with SQLite its catch-ups, the only ones. A catch-up
  // needs the WAL to grow past TPS_SQLITE_WAL_MB between two bulk checkpoints (every 100 ms), and
  // a writer that pauses lets a bulk start the WAL over instead: so bursts go on until one runs.
  const catchUps = async () => sumOf(parseMetrics(await getText(port, '/metrics')), 'tps_sqlite_checkpoint_seconds_count');
  if (store === 'sqlite') {
    let seen = 0;
    for (let i = 0; i < 50 && (seen = await catchUps()) === 0; i++) {
      const more = await Promise.all(Array.from({ length: 40 }, (_, j) => post(port, { operationKey: 'customer.create', actor: { id: `u${i}-${j}` }, resource: { type: 'customer', id: `c${j}` } }, secretKey)));
      t.true(more.every((r) => r.status === 200));
      evaluations += more.length;
    }
    t.true(seen > 0);
  } else t.is(await catchUps(), 0);

  t.is(await server.stop('SIGTERM'), 0);
  t.deepEqual(childrenOf(server.pid), []);

  // Every answered evaluation is in the one store, whichever worker committed it.
  const db = await openDatabase(database.url, { migrate: false, checkpoint: false });
  try {
    const row = await db.knex('events').where({ environment }).count<{ n: number }[]>({ n: '*' }).first();
    t.is(Number(row?.n), evaluations + 1);
  } finally {
    await db.close();
  }
});

test('TPS_WORKERS=2 with SQLite serves evaluate and ingest from two workers, the primary committing their events, and stops gracefully', servesFromTwoWorkers, 'sqlite');
test('TPS_WORKERS=2 with PostgreSQL serves evaluate and ingest from two workers, each committing its own events, and stops gracefully', servesFromTwoWorkers, 'postgres');

// Two workers allowed two CPUs (taskset), as a 2-vCPU machine runs them: with an evaluation thread
// each they would be four busy threads on two cores, so auto evaluates in each worker's HTTP thread;
// `true` still gives each worker its thread.
for (const [setting, expected] of [['auto', false], ['true', true]] as const) {
  test(`TPS_WORKERS=2 on two CPUs with SQLite: TPS_EVALUATE_THREAD=${setting} evaluates ${expected ? 'in each worker\'s thread' : 'in each worker\'s HTTP thread'}`, async (t) => {
    t.true(os.availableParallelism() >= 2, 'this test needs a machine with two CPUs or more');
    const { server, secretKey } = await twoWorkers(t, 'sqlite', { TPS_EVALUATE_THREAD: setting }, { cpus: '0,1' });
    await server.loggedPort('TPS workers listening');
    // Each worker's own word (its line may come after the primary's), the two CPUs it counted, and
    // the process itself: a tps-eval thread or none.
    const said = await server.logged(/"evaluationThread":(true|false),"cpus":2[^\n]*"msg":"TPS listening"[\s\S]*?"evaluationThread":(true|false),"cpus":2[^\n]*"msg":"TPS listening"/);
    t.deepEqual(said.slice(1), [String(expected), String(expected)], server.stdout);
    const workers = childrenOf(server.pid);
    t.is(workers.length, 2);
    for (const pid of workers) {
      t.is(allowedCpus(pid), '0-1');
      t.is(threadNames(pid).includes(THREAD_NAME), expected, threadNames(pid).join(' '));
    }
    const res = await post(server.port, samples.createCustomer(), secretKey);
    t.is(res.status, 200, JSON.stringify(res.body));
    t.is(res.body.decision, 'allow');
    t.is(await server.stop('SIGTERM'), 0);
  });
}

// A worker's counters die with it; summed without them, /metrics' counters would step back, which
// Prometheus takes for a reset (its rate() then counts the other workers' whole totals again).
test('TPS_WORKERS=2: a worker that dies is replaced, and the counters on /metrics keep what it had counted', async (t) => {
  const { server, secretKey } = await twoWorkers(t, 'sqlite');
  const port = await server.loggedPort('TPS workers listening');
  // Each on a connection of its own: the primary hands them to the two workers in turn.
  const evaluate = async (n: number, tag: string) => {
    const answers = await Promise.all(Array.from({ length: n }, (_, i) => post(port, { operationKey: 'customer.create', actor: { id: `u-${tag}-${i}` }, resource: { type: 'customer', id: `c${i}` } }, secretKey)));
    t.true(answers.every((r) => r.status === 200));
  };
  const decisions = async () => sumOf(parseMetrics(await getText(port, '/metrics')), 'tps_decisions_total');
  await evaluate(10, 'before');
  t.is(await decisions(), 10);

  const workers = childrenOf(server.pid);
  t.is(workers.length, 2);
  process.kill(workers[0]!, 'SIGKILL');
  await server.logged(/a TPS worker died; starting another[\s\S]*"msg":"TPS workers listening"/);
  t.is(childrenOf(server.pid).length, 2);
  t.is(await decisions(), 10);
  await evaluate(4, 'after');
  t.is(await decisions(), 14);

  // A second death: the retired counts add up (merged into one), without counting any twice.
  process.kill(childrenOf(server.pid)[1]!, 'SIGKILL');
  await server.logged(/a TPS worker died; starting another[\s\S]*a TPS worker died; starting another[\s\S]*"msg":"TPS workers listening"/);
  t.is(await decisions(), 14);
  await evaluate(2, 'last');
  t.is(await decisions(), 16);
  t.is(await server.stop('SIGTERM'), 0);
});
