// Browser-controlled values that must not steer the decision middleware, in Koa, Express and
// fetch-style apps served over HTTP in front of the real TPS: the operation key when the app
// resolves it itself; and human-signal timestamps, route ids and client IPs (X-Forwarded-For
// behind a trusted proxy) that TPS would refuse, which must give an evaluation, never a 503.
import test from 'ava';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient, type TpsClient } from '../../src/client/index.js';
import { decisionOf, tpsExpress, tpsFetch, tpsKoa, type Continue } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, serveFetch, uid } from './fixtures.js';

type Call = (path: string, headers: Record<string, string>) => Promise<{ status: number; body: Record<string, any> }>;

let tps: Awaited<ReturnType<typeof startTps>>;
const servers: { close(): Promise<void> }[] = [];
const calls: Record<'koa' | 'express' | 'fetch', Call> = {} as never;
const body = (tx: unknown) => ({ ok: true, tx });

// `/resolved` names its operation from the path; it knows none here, so it must stop, whatever the header says.
const resolver = (path: string) => (path.startsWith('/customers') ? 'customer.create' : undefined);
const actor = () => ({ id: uid('user'), authenticated: true });

function koaApp(client: TpsClient) {
  const router = new Router();
  const ok = (ctx: Koa.Context) => (ctx.body = body((ctx.state.tps as Continue).transaction));
  router.post('/resolved', tpsKoa({ client, actor, operationKey: (ctx) => resolver(ctx.path) }), ok);
  router.post('/header', tpsKoa({ client, actor }), ok);
  router.post('/customers/:id', tpsKoa({ client, actor, operationKey: 'customer.create' }), ok);
  const app = new Koa();
  app.proxy = true; // ctx.ip from X-Forwarded-For
  return app.use(router.routes()).callback();
}

function expressApp(client: TpsClient) {
  const api = express();
  api.set('trust proxy', true); // req.ip from X-Forwarded-For
  const ok = (_req: ExpressRequest, res: ExpressResponse) => res.json(body((res.locals.tps as Continue).transaction));
  api.post('/resolved', tpsExpress({ client, actor, operationKey: (req) => resolver(req.path) }), ok);
  api.post('/header', tpsExpress({ client, actor }), ok);
  api.post('/customers/:id', tpsExpress({ client, actor, operationKey: 'customer.create' }), ok);
  return api;
}

function fetchApp(client: TpsClient) {
  // The platform's client IP, as a Worker reads cf-connecting-ip.
  const ip = (req: Request) => req.headers.get('x-forwarded-for') ?? undefined;
  const guards = {
    '/resolved': tpsFetch({ client, actor, ip, operationKey: (req) => resolver(new URL(req.url).pathname) }),
    '/header': tpsFetch({ client, actor, ip }),
    // No route params here: the default resource id is the path.
    '/customers/': tpsFetch({ client, actor, ip, operationKey: 'customer.create' }),
  };
  return async (request: Request) => {
    const path = new URL(request.url).pathname;
    const guard = path.startsWith('/customers/') ? guards['/customers/'] : guards[path as '/header' | '/resolved'];
    return (await guard(request)) ?? Response.json(body(decisionOf(request)!.transaction));
  };
}

const overHttp = (url: string): Call => async (path, headers) => {
  const res = await fetch(url + path, { method: 'POST', headers });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

test.before(async () => {
  tps = await startTps();
  const client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 });
  const koa = await listen(koaApp(client));
  const exp = await listen(expressApp(client));
  const fetchStyle = await serveFetch(fetchApp(client));
  servers.push(koa, exp, fetchStyle);
  calls.koa = overHttp(koa.url);
  calls.express = overHttp(exp.url);
  calls.fetch = overHttp(fetchStyle.url);
});
test.after.always(async () => {
  for (const s of servers) await s.close();
  await tps?.close();
});

for (const framework of ['koa', 'express', 'fetch'] as const) {
  test(`[${framework}] an operationKey resolver that finds none halts with 400; the browser's header is not used`, async (t) => {
    const res = await calls[framework]('/resolved', { 'x-svc-operation-key': 'customer.create' });
    t.is(res.status, 400);
    t.is(res.body.error.code, 'missing_operation_key');
    // With no resolver configured, the header is still the default.
    const byHeader = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create' });
    t.is(byHeader.status, 200);
    t.is(byHeader.body.tx.operationKey, 'customer.create');
  });

  test(`[${framework}] a human-signal timestamp TPS would refuse is dropped, not answered with 503`, async (t) => {
    // The year-0 one parses, but its toISOString() is -000001-12-31T23:00:00.000Z, which TPS refuses.
    for (const signal of ['+010000-01-01T00:00:00Z', new Date(Date.now() + 3_600_000).toISOString(), '0000-01-01T00:00:00+01:00']) {
      const res = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-svc-session-id': uid('sess'), 'x-svc-recent-human-signal': signal });
      t.is(res.status, 200, signal);
      t.is(res.body.tx.session.recentHumanSignalAt, undefined, signal);
    }
    const fresh = new Date(Date.now() - 2_000).toISOString();
    const kept = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-svc-recent-human-signal': fresh });
    t.is(kept.status, 200);
    t.is(kept.body.tx.session.recentHumanSignalAt, fresh);
  });

  test(`[${framework}] a route id TPS would refuse is sent bounded and distinct, not answered with 503`, async (t) => {
    const headers = { 'x-svc-session-id': uid('sess') };
    // %01 decodes to a control character in a route param (Koa, Express); the fetch adapter uses the (encoded) path.
    const ids = new Set<string>();
    for (const raw of ['%01', '%02', 'a'.repeat(300), 'a'.repeat(301)]) {
      const res = await calls[framework](`/customers/${raw}`, headers);
      t.is(res.status, 200, `${raw.slice(0, 8)}: ${JSON.stringify(res.body)}`);
      const id: string = res.body.tx.resource.id;
      t.true(id.length <= 256 && !/\p{Cc}/u.test(id), id);
      ids.add(id);
    }
    t.is(ids.size, 4, 'two ids that differ are still told apart');
    // An id TPS accepts goes as it is.
    const plain = uid('cust');
    const kept = await calls[framework](`/customers/${plain}`, headers);
    t.is(kept.body.tx.resource.id, framework === 'fetch' ? `/customers/${plain}` : plain);
  });

  test(`[${framework}] a client IP TPS would refuse, or that is no IP, is dropped, not answered with 503`, async (t) => {
    for (const forwarded of ['9'.repeat(80), 'not-an-ip', '<script>']) {
      const res = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-forwarded-for': forwarded });
      t.is(res.status, 200, forwarded);
      t.is(res.body.tx.session?.ipAddress, undefined, forwarded);
    }
    for (const ip of ['203.0.113.7', '2001:db8::8a2e:370:7334']) {
      const res = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-forwarded-for': ip });
      t.is(res.body.tx.session?.ipAddress, ip);
    }
  });
}
