import test from 'ava';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore } from '../../src/store/eventStore.js';
import { generateKey } from '../../src/auth/keys.js';
import { readSettings } from '../../src/config/env.js';
import { runningServer } from '../helpers/script.js';
import { awayFromBucketEdge, awayFromVelocityEdge, capturedLogs, freshDatabase, get, post, REDIS_TEST_URL, REPO_ROOT, startTps, unique, type StoreKind } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] 503 store_unavailable when the store cannot commit; nothing half-written, and recovery`, async (t) => {
    const tps = await startTps({ store });
    try {
      const knex = tps.tps.db.knex;
      await knex.schema.renameTable('events', 'events_away');
      const res = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      t.is(res.status, 503);
      t.is(res.body.error.code, 'store_unavailable');
      t.false(JSON.stringify(res.body).includes('events'), 'no SQL detail leaks');
      await knex.schema.renameTable('events_away', 'events');
      t.is(await tps.tps.events.count(), 0);
      const ok = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      t.is(ok.status, 200);
      t.truthy(await tps.tps.events.get(tps.environment, ok.body.telemetryId));
    } finally {
      await tps.close();
    }
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] 503 store_unavailable with retry-after when the store cannot be read: Decision Logs, one event, its policy version, and the key lookup of every keyed call`, async (t) => {
    const keyCacheMs = 300;
    const tps = await startTps({ store, env: { TPS_KEY_CACHE_MS: String(keyCacheMs) } });
    try {
      const knex = tps.tps.db.knex;
      const evaluate = () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      const evaluated = await evaluate();
      t.is(evaluated.status, 200);
      const oneEvent = `${tps.url}/api/events/${evaluated.body.telemetryId}`;
      const unavailable = (res: { status: number; headers: Headers; body: any }, what: string) => {
        t.is(res.status, 503, what);
        t.is(res.body?.error?.code, 'store_unavailable', what);
        t.is(res.headers.get('retry-after'), '1', what);
        t.truthy(res.headers.get('x-request-id'), what);
        t.false(/events|api_keys|policy_versions/.test(JSON.stringify(res.body)), `${what}: no SQL detail leaks`);
      };
      // Away for real, as an outage takes it: the driver's own error reaches the routes.
      const away = async (table: string, during: () => Promise<void>) => {
        await knex.schema.renameTable(table, `${table}_away`);
        try {
          await during();
        } finally {
          await knex.schema.renameTable(`${table}_away`, table);
        }
      };
      await away('events', async () => {
        unavailable(await get(`${tps.url}/api/events`, tps.secretKey), 'GET /api/events');
        unavailable(await get(oneEvent, tps.secretKey), 'GET /api/events/{telemetryId}');
      });
      await away('policy_versions', async () => unavailable(await get(oneEvent, tps.secretKey), "GET /api/events/{telemetryId}, the event's policy version"));
      // Once the key's cached lookup is older than TPS_KEY_CACHE_MS, every keyed call reads the store.
      await away('api_keys', async () => {
        await sleep(keyCacheMs + 100);
        unavailable(await evaluate(), 'POST /api/evaluate, the key lookup');
      });
      t.is((await get(oneEvent, tps.secretKey)).status, 200);
      t.is((await get(`${tps.url}/api/events`, tps.secretKey)).status, 200);
      t.is((await evaluate()).status, 200);
    } finally {
      await tps.close();
    }
  });
}

for (const redis of [false, true]) {
  test(`[${redis ? 'redis' : 'memory'}] a client that waits out a 429's retry-after is let through, however often the key was refused meanwhile`, async (t) => {
    const redisPrefix = `tps-test:quota:${unique()}:`;
    const tps = await startTps({ redis, redisPrefix, env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const evaluate = () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      // The three must fall in one minute's bucket, or the sliding estimate may let a fourth through.
      await awayFromBucketEdge(60, 5_000);
      for (let i = 0; i < 3; i++) t.is((await evaluate()).status, 200);
      const refused = await evaluate();
      t.is(refused.status, 429);
      t.is(refused.body.error.code, 'rate_limited');
      const retryAfter = Number(refused.headers.get('retry-after'));
      t.true(retryAfter >= 1 && retryAfter <= 61, String(retryAfter));
      // Another caller of the key that does not wait: refused, and not counted against the one that does.
      for (let i = 0; i < 5; i++) t.is((await evaluate()).status, 429);
      t.timeout(retryAfter * 1000 + 30_000); // retry-after can be the rest of the minute
      await sleep(retryAfter * 1000);
      const next = await evaluate();
      t.is(next.status, 200, JSON.stringify(next.body));
    } finally {
      await tps.close();
    }
    if (redis) {
      const { Redis } = await import('ioredis');
      const client = new Redis(REDIS_TEST_URL);
      t.deepEqual(await client.keys(`${redisPrefix}*`), []);
      client.disconnect();
    }
  });
}

test('429 rate_limited with retry-after once the key quota is spent', async (t) => {
  const tps = await startTps({ env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '5' } });
  try {
    // The quota is a sliding minute over two fixed buckets: seven requests across a minute's edge
    // may let a sixth through (README, configuration).
    await awayFromBucketEdge(60, 5_000);
    const statuses: number[] = [];
    let last;
    for (let i = 0; i < 7; i++) {
      last = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      statuses.push(last.status);
    }
    t.deepEqual(statuses.slice(0, 5), [200, 200, 200, 200, 200]);
    t.is(statuses[5], 429);
    t.is(last!.body.error.code, 'rate_limited');
    const retryAfter = Number(last!.headers.get('retry-after'));
    t.true(retryAfter >= 1 && retryAfter <= 61);
  } finally {
    await tps.close();
  }
});

test('Redis: two instances share velocity counters and challenges; keys are cleaned up', async (t) => {
  const db = freshDatabase('sqlite');
  const prefix = `tps-test:shared:${Date.now()}:`;
  const a = await startTps({ redis: true, redisPrefix: prefix, databaseUrl: db.url });
  const b = await startTps({ redis: true, redisPrefix: prefix, databaseUrl: db.url, env: { TPS_SECRET_KEY: a.secretKey, TPS_PUBLISHABLE_KEY: a.publishableKey } });
  try {
    t.is((await awayFromVelocityEdge()).max, 30);
    const decisions: string[] = [];
    for (let i = 0; i < 31; i++) {
      const target = i % 2 === 0 ? a : b;
      decisions.push((await post(`${target.url}/api/evaluate`, samples.payment(0, 'redis_actor'), a.secretKey)).body.decision);
    }
    t.deepEqual(decisions.slice(0, 30), Array(30).fill('allow'));
    t.is(decisions[30], 'throttle');

    const challenged = await post(`${a.url}/api/evaluate`, samples.bankUpdate(), a.secretKey);
    t.is(challenged.body.decision, 'step_up_required');
    const retry = await post(`${b.url}/api/evaluate`, { ...samples.bankUpdate(), challengeResult: { type: 'passkey', passed: true } }, a.secretKey);
    t.is(retry.body.decision, 'allow');
    t.is(retry.body.score, challenged.body.score);
    const reuse = await post(`${a.url}/api/evaluate`, { ...samples.bankUpdate(), challengeResult: { type: 'passkey', passed: true } }, a.secretKey);
    t.is(reuse.body.decision, 'step_up_required');
  } finally {
    await b.close();
    await a.close();
    await db.drop();
  }
  const { Redis } = await import('ioredis');
  const redis = new Redis('redis://127.0.0.1:6379');
  t.deepEqual(await redis.keys(`${prefix}*`), []);
  redis.disconnect();
});

test('logs carry no secret key, token or payload value', async (t) => {
  const { logger, lines } = capturedLogs('trace');
  const tps = await startTps({ logger });
  try {
    await post(`${tps.url}/api/evaluate`, { ...samples.bulkExport(), metadata: { notes: 'NOTE-VALUE-9', proofToken: 'PROOF-VALUE-9' } }, tps.secretKey);
    await post(`${tps.url}/api/evaluate`, samples.createCustomer(), 'svc_sec_WRONG-KEY-VALUE');
    // Force an error path that logs: the store goes away.
    await tps.tps.db.knex.schema.renameTable('events', 'events_gone');
    await post(`${tps.url}/api/evaluate`, { ...samples.createCustomer(), metadata: { notes: 'NOTE-VALUE-9' } }, tps.secretKey);
    await tps.tps.db.knex.schema.renameTable('events_gone', 'events');
  } finally {
    await tps.close();
  }
  const all = lines.join('');
  t.true(all.includes('event store could not commit'), 'the failure was logged');
  for (const secret of [tps.secretKey, 'svc_sec_WRONG-KEY-VALUE', 'NOTE-VALUE-9', 'PROOF-VALUE-9', 'user_1']) t.false(all.includes(secret), secret);
});

for (const sync of ['full', 'normal']) {
  test(`kill -9 loses no acknowledged evaluation (TPS_SQLITE_SYNC=${sync})`, async (t) => {
    const db = freshDatabase('sqlite');
    const secretKey = generateKey('secret');
    const server = await runningServer({ DATABASE_URL: db.url, TPS_SECRET_KEY: secretKey, TPS_ENVIRONMENT: 'test', TPS_SQLITE_SYNC: sync });
    const { port } = server;
    try {
      const acknowledged: string[] = [];
      let killed = false;
      const worker = async (w: number) => {
        for (let i = 0; !killed; i++) {
          try {
            const res = await post(`http://127.0.0.1:${port}/api/evaluate`, { ...samples.createCustomer(), actor: { id: `k${w}_${i}` } }, secretKey);
            if (res.status === 200) acknowledged.push(res.body.telemetryId);
          } catch {
            return; // the connection died with the process: not acknowledged
          }
        }
      };
      const workers = Array.from({ length: 16 }, (_, w) => worker(w));
      while (acknowledged.length < 300) await new Promise((r) => setTimeout(r, 5));
      void server.stop('SIGKILL');
      killed = true;
      await Promise.all(workers);
      const reopened = await openDatabase(db.url);
      try {
        const found = await reopened.knex('events').whereIn('telemetry_id', acknowledged).count<{ n: number }[]>({ n: '*' });
        t.is(Number(found[0]!.n), acknowledged.length);
        t.true(acknowledged.length >= 300);
        t.true((await new KnexEventStore(reopened).count()) >= acknowledged.length);
      } finally {
        await reopened.close();
      }
    } finally {
      await server.stop('SIGKILL');
      await db.drop();
    }
  });
}

test('TPS_SQLITE_SYNC sets how the writer commits; anything else stops start-up naming it', async (t) => {
  for (const [sync, level] of [['full', 2], ['normal', 1]] as const) {
    const tps = await startTps({ env: { TPS_SQLITE_SYNC: sync } });
    try {
      t.deepEqual(await tps.tps.db.knex.raw('PRAGMA synchronous'), [{ synchronous: level }], sync);
    } finally {
      await tps.close();
    }
  }
  t.throws(() => readSettings({ TPS_SQLITE_SYNC: 'off' }), { message: /TPS_SQLITE_SYNC must be one of full, normal, got "off"/ });
});

test('TPS_SQLITE_WAL_MB sets the WAL size at which the writer catches up; anything but a positive number of MiB stops start-up naming it', (t) => {
  t.is(readSettings({}).sqliteWalMb, 32);
  t.is(readSettings({ TPS_SQLITE_WAL_MB: '4' }).sqliteWalMb, 4);
  t.is(readSettings({ TPS_SQLITE_WAL_MB: '0.25' }).sqliteWalMb, 0.25);
  for (const bad of ['0', '-1', 'lots']) t.throws(() => readSettings({ TPS_SQLITE_WAL_MB: bad }), { message: new RegExp(`TPS_SQLITE_WAL_MB must be a number > 0, got "${bad}"`) });
});

test('TPS_SQLITE_PAGE_SIZE sets a new SQLite file\'s page size; anything but a power of two from 1024 to 65536 stops start-up naming it', (t) => {
  t.is(readSettings({}).sqlitePageSize, 1024);
  for (const size of [1024, 2048, 4096, 65536]) t.is(readSettings({ TPS_SQLITE_PAGE_SIZE: String(size) }).sqlitePageSize, size);
  for (const bad of ['512', '1000', '3072', '131072', '4096.0.1', 'big', '-4096']) {
    t.throws(() => readSettings({ TPS_SQLITE_PAGE_SIZE: bad }), { message: new RegExp(`TPS_SQLITE_PAGE_SIZE must be a power of two from 1024 to 65536, got "${bad.replace(/\./g, '\\.')}"`) });
  }
});
