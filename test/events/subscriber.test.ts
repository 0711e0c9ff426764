import http from 'node:http';
import type { AddressInfo } from 'node:net';
import crypto from 'node:crypto';
import test from 'ava';
import { CursorCodec } from '../../src/events/cursor.js';
import { EventHub } from '../../src/events/hub.js';
import { StreamSubscriber } from '../../src/events/subscriber.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore } from '../../src/store/eventStore.js';
import { freshDatabase } from '../helpers/tps.js';
import { generateEvents } from './helpers.js';

test('a client that takes no data while its socket is full is disconnected; the others are not', async (t) => {
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url);
  const store = new KnexEventStore(db);
  const hub = new EventHub(store, { pollMs: 20, batch: 500 });
  const server = http.createServer((_req, res) => {
    const subscriber = new StreamSubscriber(res, hub, store, 'env', {}, { maxQueue: 2, pageSize: 50, heartbeatMs: 60_000, stallMs: 300, retryMs: 1000 }, new CursorCodec(crypto.randomBytes(32)));
    void subscriber.open(undefined).then(() => subscriber.serve());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  try {
    const connect = () => new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, resolve).on('error', reject));
    const stuck = await connect();
    stuck.pause();
    const reader = await connect();
    let readerBytes = 0;
    reader.on('data', (chunk: Buffer) => (readerBytes += chunk.length));

    const bulky = generateEvents('env', 2000, Date.now()).map((e) => ({ ...e, requestSummary: { note: 'y'.repeat(4000) } }));
    for (let i = 0; i < bulky.length; i += 500) await store.insertBatch(bulky.slice(i, i + 500));
    hub.notify();

    // The paused client cannot notice the disconnect without reading, so watch the server side.
    while (hub.clients > 1) await new Promise((resolve) => setTimeout(resolve, 20));
    t.is(hub.clients, 1, 'only the reading client is still connected');
    stuck.destroy();
    t.true(readerBytes > 0);
    t.true(hub.paused >= 1);
  } finally {
    await hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await db.close();
    await fresh.drop();
  }
});
