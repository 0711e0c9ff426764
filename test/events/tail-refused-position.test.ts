import net from 'node:net';
import test from 'ava';
import { startScript } from '../helpers/script.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord } from './helpers.js';

// `tps events tail` follows until interrupted, resuming after the last id the server sent. A server
// may refuse that id (400 on Last-Event-ID): migration 006 or its rollback, a store made anew. The
// tail then says what it may have missed and follows from now, rather than exiting 1.

/** A TCP proxy to a TPS, which can be pointed at another (its connections cut). */
async function switchableProxy(target: string) {
  let port = Number(new URL(target).port);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    switchTo(url: string) {
      port = Number(new URL(url).port);
      for (const s of sockets) s.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

test('tps events tail whose position the server refuses (a store made anew) warns that events may be missed, and follows from now', async (t) => {
  const first = await startTps({ store: 'sqlite' });
  t.teardown(() => first.close());
  // Another store, so another cursors' secret; the same key.
  const second = await startTps({ store: 'sqlite', env: { TPS_SECRET_KEY: first.secretKey } });
  t.teardown(() => second.close());
  const proxy = await switchableProxy(first.url);
  t.teardown(() => proxy.close());
  const tail = startScript('bin/tps.js', { TPS_SECRET_KEY: first.secretKey, LOG_LEVEL: 'silent' }, ['events', 'tail', '--url', proxy.url, '--json']);
  t.teardown(() => void tail.stop('SIGKILL'));
  let exited = false;
  void tail.exited.then(() => (exited = true));

  /** Ingests events until the tail shows one (it connects in the background). */
  const shownFrom = async (server: RunningTps) => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      const record = ingestRecord();
      t.is((await post(`${server.url}/api/events/ingest`, record, first.secretKey)).status, 201);
      for (const until = Date.now() + 1000; Date.now() < until; await new Promise((r) => setTimeout(r, 20))) {
        if (tail.stdout.includes(record.telemetryId)) return;
        if (exited) throw new Error(`the tail exited: ${tail.stderr}`);
      }
    }
    throw new Error(`the tail showed nothing: ${tail.stderr}`);
  };
  // The tail now resumes after an event of the first store's.
  await shownFrom(first);
  proxy.switchTo(second.url);
  await shownFrom(second);

  t.regex(tail.stderr, /the server answered 400: .*the server refused the position to resume from, so events committed since it may be missing here; following from now/);
  t.is(await tail.stop('SIGTERM'), 0, tail.stderr);
});
