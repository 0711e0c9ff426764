import test, { type ExecutionContext } from 'ava';
import { samples } from '../core/evaluate-suite.js';
import { logLines } from '../helpers/processes.js';
import { readyzUntil } from '../helpers/readyz.js';
import { BOUND_MS, startBehindProxy, until, within } from '../helpers/redisProxy.js';
import { capturedLogs, get, post, startTps, unique, type StartOptions } from '../helpers/tps.js';

// /readyz reports whether the shared state answers: with REDIS_URL, a PING bounded by the command
// timeout. An unreachable Redis does not by itself make the instance not ready: Redis is shared, so
// every instance would leave rotation at once, while the calls that use no Redis-backed state still
// answer and the others answer a fast 503 state_unavailable. A Redis connection's outage is logged
// through the service's logger, once when it begins and once when it is over.

const CLOSED_PORT = 'redis://127.0.0.1:1';

async function start(t: ExecutionContext, options: StartOptions) {
  const tps = await startTps(options);
  t.teardown(() => tps.close());
  return tps;
}

const readyz = (url: string) => within(get(`${url}/readyz`), BOUND_MS, '/readyz');

test('/readyz names the shared state: in process, or Redis that answers', async (t) => {
  const memory = await start(t, {});
  const inProcess = await readyz(memory.url);
  t.is(inProcess.status, 200);
  t.deepEqual(inProcess.body.state, { status: 'ok', backend: 'memory' });

  const redis = await start(t, { redis: true });
  const ready = await readyzUntil(redis.url, (body) => body.status === 'ready' && body.state.status === 'ok', BOUND_MS);
  t.deepEqual(ready.state, { status: 'ok', backend: 'redis' });
});

test('/readyz reports an unreachable Redis (a closed port) and stays ready: what needs no Redis answers, what needs it a fast 503', async (t) => {
  const tps = await start(t, { env: { REDIS_URL: CLOSED_PORT } });
  const res = await readyz(tps.url);
  t.is(res.status, 200, JSON.stringify(res.body));
  t.is(res.body.status, 'ready');
  t.is(res.body.error, undefined);
  t.deepEqual(res.body.state, { status: 'unreachable', backend: 'redis' });
  t.is(res.body.store.status, 'ok');

  // customer.create keeps no count and asks no challenge: it is decided without Redis.
  const plain = { operationKey: 'customer.create', actor: { id: 'u-1' }, resource: { type: 'customer', id: 'c-1' } };
  t.is((await within(post(`${tps.url}/api/evaluate`, plain, tps.secretKey), BOUND_MS, 'evaluate')).status, 200);
  // A payment keeps a velocity count in Redis.
  const refused = await within(post(`${tps.url}/api/evaluate`, samples.payment(0, `fin_${unique()}`), tps.secretKey), BOUND_MS, 'evaluate');
  t.is(refused.status, 503);
  t.is(refused.body.error.code, 'state_unavailable');
  t.is(refused.headers.get('retry-after'), '1');
});

test('/readyz follows a Redis that goes silent and answers again', async (t) => {
  const { tps, proxy } = await startBehindProxy(t);
  await readyzUntil(tps.url, (body) => body.state.status === 'ok', BOUND_MS);
  proxy.silence();
  const silent = await readyz(tps.url);
  t.is(silent.status, 200);
  t.deepEqual(silent.body.state, { status: 'unreachable', backend: 'redis' });
  proxy.resume();
  await readyzUntil(tps.url, (body) => body.status === 'ready' && body.state.status === 'ok', BOUND_MS);
});

test("a Redis outage is logged once through the service's logger, and once more when Redis is back", async (t) => {
  const { logger, lines } = capturedLogs('info');
  const { tps, proxy } = await startBehindProxy(t, { logger, env: { TPS_EVALUATE_THREAD: 'false' } });
  await readyzUntil(tps.url, (body) => body.state.status === 'ok', BOUND_MS);
  const logged = (msg: string) => logLines(lines.join(''), msg);

  proxy.cut();
  await until(() => logged('shared state (Redis) unreachable; reconnecting').length > 0, BOUND_MS, 'the outage logged');
  // Reconnection attempts fail meanwhile (50, 100, 150, 200 ms apart, then further): none is logged again.
  await new Promise((r) => setTimeout(r, 600));
  t.is((await readyz(tps.url)).body.state.status, 'unreachable');
  proxy.restore();
  await until(() => logged('shared state (Redis) reachable again').length > 0, BOUND_MS, 'the recovery logged');
  const outage = logged('shared state (Redis) unreachable; reconnecting');
  t.is(outage.length, 1, lines.join(''));
  t.is(outage[0]!.level, 50);
  t.is(typeof outage[0]!.err.message, 'string');
  t.is(logged('shared state (Redis) reachable again').length, 1, lines.join(''));
  t.is((await readyz(tps.url)).body.state.status, 'ok');
});
