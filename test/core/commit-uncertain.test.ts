// A commit that fails in a way that may have landed (the PostgreSQL connection cut after the batch's
// insert was sent) is looked up by its telemetryId: found, the evaluation is answered as committed;
// not found, or the store unable to say, 503 "may or may not have been recorded" naming the
// telemetryId to look up (not found proves nothing: PostgreSQL may commit it just after the read).
// The real service on a real PostgreSQL, through a TCP proxy that does the cutting.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import type { EvaluateResponse } from '../../src/api/types.js';
import { freshDatabase, PG_BASE_URL, post, startTps, type RunningTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

/** What the proxy does to the next batch commit (the call of the writer's session function). */
type Cut = 'after-commit' | 'before-send';

// The evaluate path's commit (src/store/eventWriteTx.ts): the call, not the CREATE of the function.
const BATCH_CALL = Buffer.from('tps_insert_events($1)');

/**
 * A TCP proxy to PostgreSQL. Armed, it finds the next batch commit a client sends and either drops
 * it and cuts the connection (nothing reached the store), or forwards it, holds back the server's
 * reply up to its ReadyForQuery (the statement's implicit transaction committed) and cuts the
 * connection then: the event is stored, and TPS cannot know it. `refuseAfterCut` then refuses
 * every new connection, so the store cannot be read either.
 */
async function cuttingProxy() {
  const target = new URL(PG_BASE_URL);
  let armed: { cut: Cut; refuseAfterCut: boolean; done: () => void } | undefined;
  let refusing = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (refusing) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    upstream.on('error', () => undefined);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    let tail = Buffer.alloc(0);
    let held: Buffer | undefined;
    const cut = () => {
      const was = armed!;
      armed = undefined;
      if (was.refuseAfterCut) refusing = true;
      client.destroy();
      upstream.destroy();
      was.done();
    };
    client.on('data', (chunk: Buffer) => {
      const seen = Buffer.concat([tail, chunk]);
      tail = seen.subarray(Math.max(0, seen.length - BATCH_CALL.length));
      if (armed && held === undefined && seen.includes(BATCH_CALL)) {
        if (armed.cut === 'before-send') return cut();
        held = Buffer.alloc(0);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (held === undefined) return void client.write(chunk);
      // The client waited for the last reply before sending the call: the replies begin here.
      held = Buffer.concat([held, chunk]);
      while (held.length >= 5) {
        const length = held.readInt32BE(1);
        if (held.length < 1 + length) break;
        if (held[0] === 'Z'.charCodeAt(0)) return cut();
        held = held.subarray(1 + length);
      }
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    /** Resolves once the next batch commit has been cut. */
    arm(cut: Cut, refuseAfterCut = false): Promise<void> {
      return new Promise((done) => (armed = { cut, refuseAfterCut, done }));
    },
    restore() {
      refusing = false;
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function start(t: ExecutionContext, thread: boolean) {
  const proxy = await cuttingProxy();
  const db = freshDatabase('postgres');
  const viaProxy = new URL(db.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  let tps: RunningTps | undefined;
  t.teardown(async () => {
    proxy.restore();
    await tps?.close();
    await proxy.close();
    await db.drop();
  });
  tps = await startTps({ databaseUrl: viaProxy.toString(), env: { TPS_EVALUATE_THREAD: String(thread) } });
  t.is(Boolean(tps.tps.evaluationThread), thread);
  // A first commit, so the writer's session function exists and the armed cut meets its call.
  const first = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
  t.is(first.status, 200);
  return { proxy, tps };
}

/** The 503 of a commit whose outcome is unknown: it never claims nothing was stored, and names the telemetryId to look up. */
function uncertain(t: ExecutionContext, res: Awaited<ReturnType<typeof post>>): string {
  t.is(res.status, 503);
  t.is(res.body.error.code, 'store_unavailable');
  t.notRegex(res.body.error.message, /nothing was stored/);
  t.regex(res.body.error.message, /may or may not have been recorded/);
  const telemetryId = (res.body.error.details as { path: string; message: string }[] | undefined)?.find((d) => d.path === 'telemetryId')?.message;
  t.truthy(telemetryId);
  t.true(res.body.error.message.includes(telemetryId!));
  return telemetryId!;
}

for (const thread of [true, false]) {
  const label = `[postgres, ${thread ? 'evaluation thread' : 'HTTP thread'}]`;

  test(`${label} a commit cut after it landed is answered as committed: 200 with its telemetryId, stored once`, async (t) => {
    const { proxy, tps } = await start(t, thread);
    const cut = proxy.arm('after-commit');
    const res = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
    await cut;
    t.is(await tps.tps.events.count(), 2, 'the first evaluation and this one, once');
    t.is(res.status, 200, JSON.stringify(res.body));
    const answer = res.body as EvaluateResponse;
    t.is(answer.decision, 'allow');
    const stored = await tps.tps.events.find(tps.environment, answer.telemetryId);
    t.is(stored?.decision, 'allow');
  });

  test(`${label} a commit cut before it was sent is looked up, not found: 503 may or may not have been recorded, never "nothing was stored"`, async (t) => {
    const { proxy, tps } = await start(t, thread);
    const cut = proxy.arm('before-send');
    const res = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
    await cut;
    const telemetryId = uncertain(t, res);
    t.is(res.headers.get('retry-after'), '1');
    t.is(await tps.tps.events.count(), 1, 'only the first evaluation');
    // The caller's look-up finds nothing: it may retry.
    t.is(await tps.tps.events.find(tps.environment, telemetryId!), undefined);
  });
}

test('[postgres] a commit cut after it landed, with the store then unreachable: 503 naming the telemetryId, never "nothing was stored"', async (t) => {
  const { proxy, tps } = await start(t, false);
  const cut = proxy.arm('after-commit', true);
  const res = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
  await cut;
  const telemetryId = uncertain(t, res);
  proxy.restore();
  // It was stored: the caller's look-up finds it.
  const looked = await tps.tps.events.find(tps.environment, telemetryId!);
  t.is(looked?.telemetryId, telemetryId);
});
