// The signed-in user behind the default actor, in Koa, Express and fetch-style apps served over
// HTTP in front of the real TPS: a user that is still a promise (an async auth(), a lazy lookup)
// is awaited, so the stored event names the real actor and role-gated operations see the role;
// a user lookup that throws or rejects is a 503 and one onError call, never a crash of the guard.
import test from 'ava';
import express from 'express';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient, type TpsClient } from '../../src/client/index.js';
import { decisionOf, tpsExpress, tpsFetch, tpsKoa, type Continue } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, serveFetch, uid } from './fixtures.js';

type Framework = 'koa' | 'express' | 'fetch';

let tps: Awaited<ReturnType<typeof startTps>>;
let client: TpsClient;
const servers: { close(): Promise<void> }[] = [];
const urls = {} as Record<Framework, string>;
const errors: unknown[] = [];
const onError = (err: unknown) => void errors.push(err);

/**
 * The user named by x-test-user with the support role, found asynchronously; `x-test-fail: reject`
 * makes the lookup reject (later than the guard starts waiting, as a slow session store would).
 */
function lookUp(header: (name: string) => string | null | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => setTimeout(() => {
    if (header('x-test-fail') === 'reject') reject(new Error('session store down'));
    else resolve({ id: header('x-test-user'), role: 'support' });
  }, 20));
}

const body = (tps: Continue) => ({ telemetryId: tps.evaluation.telemetryId, customer: tps.redact({ customer: { name: 'Ada', email: 'ada@example.com' } }).customer });

function koaApp() {
  const router = new Router();
  router.get('/customers/:id', async (ctx, next) => {
    ctx.state.user = lookUp((name) => ctx.get(name));
    await next();
  }, tpsKoa({ client, operationKey: 'customer.read_pii', onError }), (ctx) => (ctx.body = body(ctx.state.tps as Continue)));
  return new Koa().use(router.routes()).callback();
}

function expressApp() {
  const app = express();
  app.get('/customers/:id', (req, _res, next) => {
    (req as typeof req & { user: unknown }).user = lookUp((name) => req.get(name));
    next();
  }, tpsExpress({ client, operationKey: 'customer.read_pii', onError }), (_req, res) => res.json(body(res.locals.tps as Continue)));
  return app;
}

function fetchApp() {
  const guard = tpsFetch({
    client,
    operationKey: 'customer.read_pii',
    onError,
    user: (req) => {
      if (req.headers.get('x-test-fail') === 'throw') throw new Error('auth bug');
      return lookUp((name) => req.headers.get(name));
    },
    ip: (req) => {
      if (req.headers.get('x-test-fail') === 'ip') throw new Error('no platform ip');
      return undefined;
    },
  });
  return async (request: Request) => (await guard(request)) ?? Response.json(body(decisionOf(request)!));
}

test.before(async () => {
  tps = await startTps();
  client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 });
  const running = { koa: await listen(koaApp()), express: await listen(expressApp()), fetch: await serveFetch(fetchApp()) };
  for (const [name, server] of Object.entries(running)) {
    servers.push(server);
    urls[name as Framework] = server.url;
  }
});
test.after.always(async () => {
  for (const s of servers) await s.close();
  await tps?.close();
});

async function call(framework: Framework, headers: Record<string, string>) {
  const res = await fetch(`${urls[framework]}/customers/${uid('cust')}`, { headers });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text.startsWith('{') ? text : '{}') as Record<string, any>, text };
}

for (const framework of ['koa', 'express', 'fetch'] as const) {
  test.serial(`[${framework}] a user that is a promise is awaited: the stored event names the actor, and the role counts`, async (t) => {
    const user = uid('user');
    const res = await call(framework, { 'x-test-user': user });
    t.truthy(res.body.telemetryId, res.text);
    const event = await client.events.get(res.body.telemetryId);
    t.is(event.actorId, user);
    // customer.read_pii is allowed (redacted) for support and denied to everyone else, anonymous included.
    t.is(res.status, 200);
    t.is(event.decision, 'allow_redacted');
    t.deepEqual(res.body.customer, { name: 'Ada', email: '***' });
  });

  test.serial(`[${framework}] a user lookup that rejects answers 503 protection_unavailable and tells onError once`, async (t) => {
    errors.length = 0;
    const res = await call(framework, { 'x-test-user': uid('user'), 'x-test-fail': 'reject' });
    t.is(res.status, 503, res.text);
    t.is(res.body.error?.code, 'protection_unavailable');
    t.is(errors.length, 1);
    t.is((errors[0] as Error).message, 'session store down');
  });
}

test.serial('[fetch] a user or ip callback that throws answers 503 protection_unavailable and tells onError once', async (t) => {
  for (const [fail, message] of [['throw', 'auth bug'], ['ip', 'no platform ip']] as const) {
    errors.length = 0;
    const res = await call('fetch', { 'x-test-user': uid('user'), 'x-test-fail': fail });
    t.is(res.status, 503, res.text);
    t.is(res.body.error?.code, 'protection_unavailable');
    t.deepEqual(errors.map((e) => (e as Error).message), [message]);
  }
});
