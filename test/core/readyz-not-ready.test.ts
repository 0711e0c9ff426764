// GET /readyz when the store cannot be reached: the real service on PostgreSQL through a TCP proxy
// that the test cuts (every connection dropped, new ones refused) and then restores.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { freshDatabase, get, PG_BASE_URL, startTps } from '../helpers/tps.js';

/** A TCP proxy to PostgreSQL that can cut every connection and refuse new ones until restored. */
async function cuttableProxy() {
  const target = new URL(PG_BASE_URL);
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (cut) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => undefined);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut() {
      cut = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      cut = false;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('an unreachable store answers 503 with a not_ready error beside the readiness fields', async (t) => {
  const proxy = await cuttableProxy();
  const db = freshDatabase('postgres');
  const viaProxy = new URL(db.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  let tps: Awaited<ReturnType<typeof startTps>> | undefined;
  t.teardown(async () => {
    proxy.restore();
    await tps?.close();
    await proxy.close();
    await db.drop();
  });
  tps = await startTps({ databaseUrl: viaProxy.toString() });

  const ready = await get(`${tps.url}/readyz`);
  t.is(ready.status, 200);
  t.is(ready.body.status, 'ready');
  t.false('error' in ready.body);

  proxy.cut();
  const down = await get(`${tps.url}/readyz`);
  t.is(down.status, 503);
  t.deepEqual(down.body.error, { code: 'not_ready', message: 'not ready: the store is unreachable' });
  t.like(down.body, { status: 'not_ready', store: { status: 'unreachable', dialect: 'postgres' }, evaluation: { status: 'ok' } });
  t.true(Array.isArray(down.body.policies) && down.body.policies.length > 0);

  proxy.restore();
  const back = await get(`${tps.url}/readyz`);
  t.is(back.status, 200);
  t.false('error' in back.body);
});
