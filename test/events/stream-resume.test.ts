// Resuming the Event Stream from a cursor: a cursor not of this environment is refused before the
// stream starts (one past the newest event is not: stream-after-retention.test.ts), and a stream
// resumed under steady commits goes live rather than re-reading the store.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { CursorCodec } from '../../src/events/cursor.js';
import { EventHub } from '../../src/events/hub.js';
import { StreamSubscriber } from '../../src/events/subscriber.js';
import { openDatabase } from '../../src/store/db.js';
import type { EventFilter } from '../../src/store/eventFilter.js';
import { KnexEventStore, type PageOptions, type ReadEvent } from '../../src/store/eventStore.js';
import { freshDatabase, post, startTps, type RunningTps } from '../helpers/tps.js';
import { generateEvents, ingestRecord, newEnvironment, openStream, query, serverCursors, uid } from './helpers.js';

/** A stream request that reads the body only when it is an ordinary (non-stream) answer. */
async function request(tps: RunningTps, key: string, params: Record<string, string>, lastEventId?: string) {
  const abort = new AbortController();
  const res = await fetch(`${tps.url}/api/events/stream?${query(params)}`, {
    headers: { authorization: `Bearer ${key}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: abort.signal,
  });
  const type = res.headers.get('content-type') ?? '';
  // A stream that started would never end: drop it rather than hang the test.
  const body = type.startsWith('application/json') ? ((await res.json()) as { error: { code: string; details: { path: string }[] } }) : undefined;
  abort.abort();
  return { status: res.status, type, body };
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a cursor of another environment is a 400 before the stream starts; one at the newest resumes`, async (t) => {
    // A slow poll: the hub learns of commits made past it (another process's) only when asked.
    const tps = await startTps({ store, env: { TPS_STREAM_POLL_MS: '60000' } });
    t.teardown(() => tps.close());
    const { environment, secretKey } = await newEnvironment(tps);
    const ingest = async () => {
      const record = ingestRecord();
      t.is((await post(`${tps.url}/api/events/ingest`, record, secretKey)).status, 201);
      return record.telemetryId;
    };
    for (let i = 0; i < 3; i++) await ingest();
    const head = await tps.tps.events.head();
    const cursors = await serverCursors(tps);
    const encodeCursor = (seq: number) => cursors.encode(environment, seq);

    const elsewhere = cursors.encode(`${environment}x`, head);
    for (const [params, lastEventId, path] of [
      [{}, elsewhere, 'Last-Event-ID'],
      [{ cursor: elsewhere }, undefined, 'cursor'],
      [{ cursor: cursors.encode(`${environment}x`, Number.MAX_SAFE_INTEGER) }, undefined, 'cursor'],
    ] as const) {
      const res = await request(tps, secretKey, params, lastEventId);
      t.is(res.status, 400, path);
      t.true(res.type.startsWith('application/json'), 'an ordinary answer, not a stream');
      t.is(res.body?.error.code, 'invalid_request');
      t.is(res.body?.error.details[0]!.path, path);
    }

    // At the head: the next commit arrives, by header and by query.
    const byHeader = await openStream(tps.url, secretKey, {}, encodeCursor(head));
    const byQuery = await openStream(tps.url, secretKey, { cursor: encodeCursor(head) });
    try {
      t.is(byHeader.status, 200);
      t.is(byQuery.status, 200);
      const next = await ingest();
      t.is((await byHeader.take(1))[0]!.event.telemetryId, next);
      t.is((await byQuery.take(1))[0]!.event.telemetryId, next);

      // Committed past this hub (as by another process): the store's head, not the hub's, decides.
      const [other] = generateEvents(environment, 1, Date.now()).map((e) => ({ ...e, telemetryId: uid('other') }));
      await tps.tps.events.insertBatch([other!]);
      const storeHead = await tps.tps.events.head();
      t.true(storeHead > tps.tps.hub.head, 'the hub has not read it yet');
      const past = await openStream(tps.url, secretKey, {}, encodeCursor(storeHead));
      try {
        t.is(past.status, 200);
        const after = await ingest();
        t.is((await past.take(1))[0]!.event.telemetryId, after);
      } finally {
        past.close();
      }
    } finally {
      byHeader.close();
      byQuery.close();
    }
  });
}

/** The real store, counting the catch-up reads (page()) made of it. */
class CountingStore extends KnexEventStore {
  pages = 0;
  /** Runs alongside each page(): under load a commit lands during every catch-up read; here it surely does. */
  duringRead: () => Promise<void> = async () => undefined;
  override async page(environment: string, filter: EventFilter, o: PageOptions): Promise<ReadEvent[]> {
    this.pages++;
    const [rows] = await Promise.all([super.page(environment, filter, o), this.duringRead()]);
    return rows;
  }
}

test('a stream resumed under steady commits catches up once, then takes every event live: each once, in order', async (t) => {
  t.timeout(60_000);
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url);
  const store = new CountingStore(db);
  const hub = new EventHub(store, { pollMs: 1000, batch: 500 });
  const cursors = new CursorCodec(crypto.randomBytes(32));
  const server = http.createServer((req, res) => {
    const cursor = req.headers['last-event-id'];
    const subscriber = new StreamSubscriber(res, hub, store, 'env', {}, { maxQueue: 10_000, pageSize: 10, heartbeatMs: 60_000, stallMs: 60_000, retryMs: 1000 }, cursors);
    void subscriber.open(typeof cursor === 'string' ? cursors.decode('env', cursor) : undefined).then(() => subscriber.serve());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const batch = (n: number) => generateEvents('env', n, Date.now()).map((e) => ({ ...e, telemetryId: uid('p') }));

  let producing = true;
  let racing = true;
  let producer: Promise<void> = Promise.resolve();
  try {
    await store.insertBatch(batch(40));
    const resumeAt = (await store.since(0, 40))[9]!.seq;
    const commit = async () => {
      await store.insertBatch(batch(2));
      hub.notify();
      return store.head();
    };
    // The hub has read the commit before the read returns, so its head has moved by every check.
    store.duringRead = async () => {
      if (!racing) return;
      const seq = await commit();
      while (racing && hub.head < seq) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    // Steady commits, each waking the hub as the evaluate and ingest paths do.
    producer = (async () => {
      while (producing) {
        await commit();
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();

    const stream = await openStream(url, 'unused', {}, cursors.encode('env', resumeAt));
    try {
      t.is(stream.status, 200);
      const received = await stream.take(30 + 200);
      // Well past its connection: it has caught up. From here on, events must come from the hub.
      const pagesWhenCaughtUp = store.pages;
      received.push(...(await stream.take(300)));
      t.is(store.pages, pagesWhenCaughtUp, 'no store reads once caught up');

      racing = false;
      producing = false;
      await producer;
      hub.notify();
      const expected = (await store.since(resumeAt, 100_000)).map((e) => e.telemetryId);
      received.push(...(await stream.take(expected.length - received.length)));
      t.deepEqual(
        received.map((m) => m.event.telemetryId),
        expected,
        'every event once, in commit order',
      );
    } finally {
      stream.close();
    }
  } finally {
    racing = false;
    producing = false;
    await producer;
    await hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await db.close();
    await fresh.drop();
  }
});
