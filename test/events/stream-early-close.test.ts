// A stream client may leave at any moment, including while the route is still reading the store
// (the key lookup, the cursor check) before the stream opens. The hub must let it go: a client left
// attached keeps a listener, a heartbeat timer and the hub's store polling for the life of the process.
import net from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';

const request = (tps: RunningTps, lastEventId?: string) =>
  `GET /api/events/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tps.secretKey}\r\n${lastEventId ? `Last-Event-ID: ${lastEventId}\r\n` : ''}\r\n`;

function connect(tps: RunningTps): Promise<net.Socket> {
  const { port } = new URL(tps.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => resolve(socket)).on('error', reject);
  });
}

/** Reads one socket until its text holds `marker`; returns that text. */
function readUntil(socket: net.Socket, marker: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes(marker)) {
        socket.off('data', onData);
        resolve(text);
      }
    };
    socket.on('data', onData).once('close', () => reject(new Error(`the connection closed before ${JSON.stringify(marker)}: ${JSON.stringify(text)}`)));
  });
}

/** The bound of each wait: far above what it takes, for a loaded machine; it catches a wait that never ends. */
const BOUND_MS = 15_000;

async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${BOUND_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** How many stream requests the route has finished with (answered, opened, or let go): the request metric. */
async function streamRequestsHandled(tps: RunningTps): Promise<number> {
  const { values } = await tps.tps.metrics.requests.get();
  return values.filter((v) => v.labels.route === '/api/events/stream').reduce((sum, v) => sum + v.value, 0);
}

/**
 * That no client is left attached once the route has finished with `requests` stream requests in
 * all. Waiting for the route first matters: a client that left is attached (or not) only after the
 * route's store reads, so a count of 0 before then proves nothing, however long it lasts. A client
 * attached before it left is let go at its connection's close, which may come just after.
 */
async function noneLeft(t: ExecutionContext, tps: RunningTps, requests: number): Promise<void> {
  await until(async () => (await streamRequestsHandled(tps)) >= requests, `the route finishing ${requests} stream requests`);
  await until(() => tps.tps.hub.clients === 0, 'every client let go');
  t.is(tps.tps.hub.clients, 0);
}

/**
 * A server whose every connection's key lookup is a store read (a key cache of 0), one more await
 * before a stream opens. Heartbeats are left at their default (15 s), past every wait here: a client
 * must be let go when it leaves, not at a later heartbeat.
 */
async function server(t: ExecutionContext, store: StoreKind): Promise<RunningTps> {
  const tps = await startTps({ store, env: { TPS_KEY_CACHE_MS: '0' } });
  t.teardown(() => tps.close());
  return tps;
}

/** Opens a stream the ordinary way, reads its opening block and leaves; returns the block's id. */
async function openingId(t: ExecutionContext, tps: RunningTps): Promise<string> {
  const socket = await connect(tps);
  socket.write(request(tps));
  const opening = await readUntil(socket, ': connected\n\n');
  socket.destroy();
  await noneLeft(t, tps, 1);
  const id = /^id: (\S+)$/m.exec(opening)?.[1];
  if (!id) throw new Error(`the opening block has no id: ${JSON.stringify(opening)}`);
  return id;
}

/** Ten connections that each ask for the stream and close as soon as the request is sent. */
async function askAndLeave(tps: RunningTps, lastEventId?: string): Promise<void> {
  const sockets = await Promise.all(Array.from({ length: 10 }, () => connect(tps)));
  // Closed once the request has left (written to the kernel), so that the server surely reads it.
  await Promise.all(sockets.map((socket) => new Promise<void>((resolve) => socket.write(request(tps, lastEventId), () => resolve(void socket.destroy())))));
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] clients that leave while their Last-Event-ID is checked against the store are let go`, async (t) => {
    const tps = await server(t, store);
    // Every EventSource or `tps events tail` reconnect resumes this way.
    await askAndLeave(tps, await openingId(t, tps));
    await noneLeft(t, tps, 11);
  });

  test(`[${store}] clients that leave during their key lookup are let go`, async (t) => {
    const tps = await server(t, store);
    await askAndLeave(tps);
    await noneLeft(t, tps, 10);
  });

  test(`[${store}] a stream whose response waits behind another on the same connection is let go when the connection closes`, async (t) => {
    const tps = await server(t, store);
    // HTTP pipelining: the second response waits behind the first, which never ends, so it has no
    // socket of its own to report the connection closing.
    const socket = await connect(tps);
    socket.write(request(tps) + request(tps));
    await readUntil(socket, ': connected\n\n');
    // The route has finished with both, so both are attached: neither is to be let go before the close.
    await until(async () => (await streamRequestsHandled(tps)) >= 2, 'the route finishing both stream requests');
    t.is(tps.tps.hub.clients, 2, 'both streams opened');
    socket.destroy();
    await noneLeft(t, tps, 2);
  });
}
