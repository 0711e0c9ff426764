// Browser-controlled headers that must not steer the decision middleware, in Koa, Express and
// fetch-style apps in front of the real TPS: the operation key when the app resolves it itself,
// and human-signal timestamps that parse but that TPS would refuse.
import test from 'ava';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient, type TpsClient } from '../../src/client/index.js';
import { decisionOf, tpsExpress, tpsFetch, tpsKoa, type Continue } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, uid } from './fixtures.js';

type Call = (path: string, headers: Record<string, string>) => Promise<{ status: number; body: Record<string, any> }>;

let tps: Awaited<ReturnType<typeof startTps>>;
const servers: { close(): Promise<void> }[] = [];
const calls: Record<'koa' | 'express' | 'fetch', Call> = {} as never;

// `/resolved` names its operation from the path; it knows none here, so it must stop, whatever the header says.
const resolver = (path: string) => (path.startsWith('/customers') ? 'customer.create' : undefined);
const actor = () => ({ id: uid('user'), authenticated: true });

function koaApp(client: TpsClient) {
  const router = new Router();
  const ok = (ctx: Koa.Context) => (ctx.body = { ok: true, tx: (ctx.state.tps as Continue).transaction });
  router.post('/resolved', tpsKoa({ client, actor, operationKey: (ctx) => resolver(ctx.path) }), ok);
  router.post('/header', tpsKoa({ client, actor }), ok);
  return new Koa().use(router.routes()).callback();
}

function expressApp(client: TpsClient) {
  const api = express();
  const ok = (_req: ExpressRequest, res: ExpressResponse) => res.json({ ok: true, tx: (res.locals.tps as Continue).transaction });
  api.post('/resolved', tpsExpress({ client, actor, operationKey: (req) => resolver(req.path) }), ok);
  api.post('/header', tpsExpress({ client, actor }), ok);
  return api;
}

function fetchCall(client: TpsClient): Call {
  const guards = {
    '/resolved': tpsFetch({ client, actor, operationKey: (req) => resolver(new URL(req.url).pathname) }),
    '/header': tpsFetch({ client, actor }),
  };
  return async (path, headers) => {
    const request = new Request(`https://app.example${path}`, { method: 'POST', headers });
    const blocked = await guards[path as keyof typeof guards](request);
    if (blocked) return { status: blocked.status, body: (await blocked.json()) as Record<string, any> };
    return { status: 200, body: { ok: true, tx: decisionOf(request)!.transaction } };
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
  servers.push(koa, exp);
  calls.koa = overHttp(koa.url);
  calls.express = overHttp(exp.url);
  calls.fetch = fetchCall(client);
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
    for (const signal of ['+010000-01-01T00:00:00Z', new Date(Date.now() + 3_600_000).toISOString()]) {
      const res = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-svc-session-id': uid('sess'), 'x-svc-recent-human-signal': signal });
      t.is(res.status, 200, signal);
      t.is(res.body.tx.session.recentHumanSignalAt, undefined, signal);
    }
    const fresh = new Date(Date.now() - 2_000).toISOString();
    const kept = await calls[framework]('/header', { 'x-svc-operation-key': 'customer.create', 'x-svc-recent-human-signal': fresh });
    t.is(kept.status, 200);
    t.is(kept.body.tx.session.recentHumanSignalAt, fresh);
  });
}
