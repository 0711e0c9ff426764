import http from 'node:http';
import type { TestFn } from 'ava';
import type { DecisionEvent } from '../../src/api/types.js';
import { parseSse } from '../../src/events/sseParser.js';
import { samples } from '../core/evaluate-suite.js';
import { get, post, startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';
import { ingestRecord, newEnvironment, openStream, uid } from './helpers.js';

// GET /api/events/stream over real HTTP, once per store. The server's queue bound is small so the
// slow-client path is reached with a modest volume; the heartbeat is fast so a test can see one.

type Ctx = { tps: RunningTps };

export function registerStreamSuite(test: TestFn<Ctx>, store: StoreKind): void {
  test.before(async (t) => {
    t.context.tps = await startTps({ store, env: { TPS_STREAM_MAX_QUEUE: '8', TPS_STREAM_HEARTBEAT_MS: '200', TPS_STREAM_POLL_MS: '50' } });
  });
  test.after.always(async (t) => {
    await t.context.tps?.close();
  });

  const ingest = (t: { context: Ctx }, key: string, overrides = {}) => {
    const record = ingestRecord({ telemetryId: uid('s'), ...overrides });
    return post(`${t.context.tps.url}/api/events/ingest`, record, key).then((res) => {
      if (res.status !== 201) throw new Error(`ingest answered ${res.status}`);
      return record.telemetryId;
    });
  };
  const ingestMany = async (t: { context: Ctx }, key: string, n: number, overrides = {}) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await ingest(t, key, overrides));
    return ids;
  };

  test(`[${store}] live delivery: matching events arrive in commit order with cursor ids, others do not`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const stream = await openStream(t.context.tps.url, secretKey, { operationKey: 'invoice.export', reason: 'bulk_or_export_volume' });
    t.is(stream.status, 200);
    try {
      const expected: string[] = [];
      for (let i = 0; i < 30; i++) {
        const match = i % 3 !== 1;
        const id = await ingest(t, secretKey, match ? {} : { operationKey: 'customer.create' });
        if (match) expected.push(id);
      }
      const evaluated = await post(`${t.context.tps.url}/api/evaluate`, samples.bulkExport(), secretKey);
      expected.push(evaluated.body.telemetryId);
      const got = await stream.take(expected.length);
      t.deepEqual(got.map((m) => m.event.telemetryId), expected);
      t.is(got.at(-1)!.event.source, 'evaluate');
      // An id is a cursor: the Decision Logs continue from it (older events, newest first).
      const page = await get(`${t.context.tps.url}/api/events?operationKey=invoice.export&limit=1&cursor=${got[1]!.id}`, secretKey);
      t.is(page.body.events[0].telemetryId, expected[0]);
    } finally {
      stream.close();
    }
  });

  test(`[${store}] resume with Last-Event-ID: exactly the missed events, in order, then live`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const { url } = t.context.tps;
    const first = await openStream(url, secretKey);
    const before = await ingestMany(t, secretKey, 5);
    const seen = await first.take(5);
    first.close();
    t.deepEqual(seen.map((m) => m.event.telemetryId), before);

    const missed = await ingestMany(t, secretKey, 12);
    const second = await openStream(url, secretKey, {}, seen.at(-1)!.id);
    try {
      const caughtUp = await second.take(12);
      t.deepEqual(caughtUp.map((m) => m.event.telemetryId), missed);
      const live = await ingestMany(t, secretKey, 4);
      t.deepEqual((await second.take(4)).map((m) => m.event.telemetryId), live);
    } finally {
      second.close();
    }
    // The cursor may also come as ?cursor= (clients that cannot set headers).
    const third = await openStream(url, secretKey, { cursor: seen[2]!.id });
    try {
      t.deepEqual((await third.take(2)).map((m) => m.event.telemetryId), before.slice(3));
    } finally {
      third.close();
    }
  });

  test(`[${store}] reconnecting again and again while events pour in loses nothing and repeats nothing`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const { url } = t.context.tps;
    const total = 150;
    // The first connection starts "now"; it is open before anything is produced.
    let stream = await openStream(url, secretKey);
    const producing = (async () => {
      const ids: string[] = [];
      for (let i = 0; i < total; i += 5) ids.push(...(await Promise.all(Array.from({ length: 5 }, () => ingest(t, secretKey)))));
      return ids;
    })();
    const received: { id: string; event: DecisionEvent }[] = [];
    // Take a few events per connection, then drop it and resume from the last id.
    for (;;) {
      const batch = await stream.take(Math.min(7, total - received.length));
      stream.close();
      received.push(...batch);
      if (received.length === total) break;
      stream = await openStream(url, secretKey, {}, batch.at(-1)!.id);
    }
    const produced = await producing;
    const committed = (await get(`${url}/api/events?limit=500`, secretKey)).body.events.map((e: DecisionEvent) => e.telemetryId).reverse();
    t.is(new Set(produced).size, total);
    t.deepEqual(received.map((m) => m.event.telemetryId), committed, 'every event once, in commit order');
  });

  test(`[${store}] heartbeats keep an idle stream alive`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const stream = await openStream(t.context.tps.url, secretKey);
    try {
      let comment = '';
      while (comment !== 'heartbeat') comment = await stream.nextComment();
      t.pass();
    } finally {
      stream.close();
    }
  });

  test(`[${store}] a stream sees only its own environment`, async (t) => {
    const a = await newEnvironment(t.context.tps);
    const b = await newEnvironment(t.context.tps);
    const streamB = await openStream(t.context.tps.url, b.secretKey);
    try {
      await ingestMany(t, a.secretKey, 10);
      const own = await ingest(t, b.secretKey);
      const got = await streamB.take(1);
      t.is(got[0]!.event.telemetryId, own);
      t.is(got[0]!.event.environment, b.environment);
      // A cursor taken in B and replayed still yields only B's events.
      await ingestMany(t, a.secretKey, 3);
      const ownLater = await ingest(t, b.secretKey);
      const replay = await openStream(t.context.tps.url, b.secretKey, {}, got[0]!.id);
      t.is((await replay.take(1))[0]!.event.telemetryId, ownLater);
      replay.close();
    } finally {
      streamB.close();
    }
  });

  test(`[${store}] a bad stream filter or Last-Event-ID is a 400 before any stream starts`, async (t) => {
    const { url, secretKey } = t.context.tps;
    const bad = await get(`${url}/api/events/stream?riskBand=severe`, secretKey);
    t.is(bad.status, 400);
    t.is(bad.body.error.details[0].path, 'riskBand');
    t.is((await get(`${url}/api/events/stream?limit=5`, secretKey)).body.error.details[0].path, 'limit');
    const res = await fetch(`${url}/api/events/stream`, { headers: { authorization: `Bearer ${secretKey}`, 'last-event-id': 'garbage' } });
    t.is(res.status, 400);
    t.is(((await res.json()) as { error: { details: { path: string }[] } }).error.details[0]!.path, 'Last-Event-ID');
  });

  test(`[${store}] many clients at once; a client that stops reading holds up neither them nor evaluate`, async (t) => {
    const { tps } = t.context;
    const { secretKey } = await newEnvironment(tps);
    const pausedBefore = tps.tps.hub.paused;

    // The slow client: a response nobody reads, so the socket buffers fill and stay full.
    const slow = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${tps.url}/api/events/stream`, { headers: { authorization: `Bearer ${secretKey}` } }, resolve).on('error', reject);
    });
    slow.pause();
    const fast = await Promise.all(Array.from({ length: 12 }, () => openStream(tps.url, secretKey)));

    // Big (but valid) events, so a few hundred overflow the kernel's socket buffers.
    const bulky = { requestSummary: { note: 'x'.repeat(3900) } };
    const total = 1600;
    const ids: string[] = [];
    for (let i = 0; i < total; i += 40) ids.push(...(await Promise.all(Array.from({ length: 40 }, () => ingest(t, secretKey, bulky)))));
    // Evaluate still answers while the slow client sits on a full socket.
    const evaluated = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), secretKey);
    t.is(evaluated.status, 200);
    ids.push(evaluated.body.telemetryId);

    const committed = (await walkIds(tps.url, secretKey)).reverse();
    t.deepEqual([...committed].sort(), [...ids].sort());
    for (const client of fast) {
      t.deepEqual((await client.take(ids.length)).map((m) => m.event.telemetryId), committed);
      client.close();
    }
    t.true(tps.tps.hub.paused > pausedBefore, 'the slow client overflowed its queue and was paused');

    // Once it reads again it catches up from the store: every event once, in order.
    const got: string[] = [];
    slow.resume();
    for await (const item of parseSse(slow)) {
      if (item.kind !== 'message') continue;
      got.push((JSON.parse(item.data) as DecisionEvent).telemetryId);
      if (got.length === ids.length) break;
    }
    slow.destroy();
    t.deepEqual(got, committed);
  });
}

async function walkIds(url: string, key: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '';
  do {
    const res = await get(`${url}/api/events?limit=500${cursor ? `&cursor=${cursor}` : ''}`, key);
    ids.push(...res.body.events.map((e: DecisionEvent) => e.telemetryId));
    cursor = res.body.nextCursor ?? '';
  } while (cursor);
  return ids;
}
