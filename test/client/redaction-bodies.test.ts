// allow_redacted through the Koa and Express middleware, against the real TPS (a support user on
// customer.read_pii is allowed with customer.email masked): bodies the middleware used to let out
// unredacted. An ORM-style model (its toJSON is what is sent), a Koa handler that throws after
// setting the body, and Koa bodies other than an object: JSON text or bytes are redacted, a stream
// or non-JSON text is refused with 500 and onError, and ctx.respond = false is stopped.
import { Readable } from 'node:stream';
import test from 'ava';
import express from 'express';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient } from '../../src/client/index.js';
import { tpsExpress, tpsKoa } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, uid, type Running } from './fixtures.js';

const EMAIL = 'ada@example.com';
const row = () => ({ id: uid('c'), name: 'Ada', email: EMAIL });

/** What Sequelize and friends hand out: the columns sit under dataValues, toJSON gives them flat. */
class Customer {
  dataValues: Record<string, unknown>;
  constructor(values: Record<string, unknown>) {
    this.dataValues = values;
  }
  toJSON() {
    return { ...this.dataValues };
  }
}

let tps: Awaited<ReturnType<typeof startTps>>;
let koaApp: Running;
let expressApp: Running;
const errors: { path: string; message: string }[] = [];

test.before(async () => {
  tps = await startTps();
  const client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 });
  const options = {
    client,
    operationKey: 'customer.read_pii',
    actor: () => ({ id: uid('agent'), authenticated: true, role: 'support' }),
  };
  const guard = tpsKoa({ ...options, onError: (err, ctx) => errors.push({ path: ctx.path, message: (err as Error).message }) });
  const router = new Router();
  router.get('/model', guard, (ctx) => {
    ctx.body = { customer: new Customer(row()) };
  });
  router.get('/throws', guard, (ctx) => {
    ctx.body = { customer: row() };
    throw new Error('handler failed after setting the body');
  });
  router.get('/json-string', guard, (ctx) => {
    ctx.type = 'json';
    ctx.body = JSON.stringify({ customer: row() });
  });
  router.get('/json-buffer', guard, (ctx) => {
    ctx.body = Buffer.from(JSON.stringify({ customer: row() }));
    ctx.type = 'application/vnd.api+json';
  });
  router.get('/stream', guard, (ctx) => {
    ctx.type = 'json';
    ctx.body = Readable.from([JSON.stringify({ customer: row() })]);
  });
  router.get('/text', guard, (ctx) => {
    ctx.body = `Ada <${EMAIL}>`;
  });
  router.get('/redirect', guard, (ctx) => {
    ctx.redirect('/model');
  });
  router.get('/respond-false', guard, (ctx) => {
    ctx.respond = false;
    const res = ctx.res;
    // The app answers by itself, after the middleware chain has returned.
    setImmediate(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ customer: row() })));
  });
  router.get('/opted-out-stream', tpsKoa({ ...options, redact: false }), (ctx) => {
    ctx.type = 'json';
    ctx.body = Readable.from([JSON.stringify(ctx.state.tps.redact({ customer: row() }))]);
  });
  const koa = new Koa();
  koa.silent = true;
  // An outer error handler that keeps whatever body the handler left.
  koa.use(async (ctx, next) => {
    try {
      await next();
    } catch {
      ctx.status = 500;
    }
  });
  koa.use(router.routes());
  koaApp = await listen(koa.callback());

  const api = express();
  api.get('/model', tpsExpress(options), (_req, res) => {
    res.json({ customer: new Customer(row()) });
  });
  expressApp = await listen(api);
});
test.after.always(async () => {
  await koaApp?.close();
  await expressApp?.close();
  await tps?.close();
});

async function get(url: string) {
  const res = await fetch(url);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

for (const [name, app] of [['Koa', () => koaApp], ['Express', () => expressApp]] as const) {
  test(`${name}: a model's email is redacted in what is sent (its toJSON form)`, async (t) => {
    const res = await get(`${app().url}/model`);
    t.is(res.status, 200);
    t.false(res.text.includes(EMAIL), res.text);
    t.like(JSON.parse(res.text), { customer: { name: 'Ada', email: '***' } });
  });
}

test('Koa: a handler that throws after setting the body; the outer 500 does not carry it', async (t) => {
  const res = await get(`${koaApp.url}/throws`);
  t.is(res.status, 500);
  t.false(res.text.includes(EMAIL), res.text);
});

test('Koa: a JSON string or Buffer body is parsed and redacted, its content type kept', async (t) => {
  const text = await get(`${koaApp.url}/json-string`);
  t.is(text.status, 200);
  t.like(JSON.parse(text.text), { customer: { name: 'Ada', email: '***' } });
  t.regex(text.type ?? '', /^application\/json/);
  const bytes = await get(`${koaApp.url}/json-buffer`);
  t.is(bytes.status, 200);
  t.like(JSON.parse(bytes.text), { customer: { name: 'Ada', email: '***' } });
  t.is(bytes.type, 'application/vnd.api+json');
});

test('Koa: a stream or non-JSON text body is refused with 500 redaction_unavailable and onError', async (t) => {
  for (const path of ['/stream', '/text']) {
    const res = await get(`${koaApp.url}${path}`);
    t.is(res.status, 500, path);
    t.false(res.text.includes(EMAIL), res.text);
    t.is(JSON.parse(res.text).error.code, 'redaction_unavailable', path);
    t.true(errors.some((e) => e.path === path && /cannot redact/.test(e.message)), path);
  }
});

test('Koa: ctx.respond = false under allow_redacted is stopped and reported', async (t) => {
  // The connection is closed without an answer: fetch fails, or at least no email arrives.
  const res = await get(`${koaApp.url}/respond-false`).catch((err: Error) => ({ status: 0, type: null, text: String(err) }));
  t.false(res.text.includes(EMAIL), res.text);
  t.is(res.status, 0);
  t.true(errors.some((e) => e.path === '/respond-false' && /respond = false/.test(e.message)));
});

test('Koa: a route that opted out (redact: false) streams what it redacted itself', async (t) => {
  const res = await get(`${koaApp.url}/opted-out-stream`);
  t.is(res.status, 200);
  t.like(JSON.parse(res.text), { customer: { name: 'Ada', email: '***' } });
});

test('Koa: a redirect under allow_redacted is sent as it is (its body is a note naming the target, not data)', async (t) => {
  const res = await fetch(`${koaApp.url}/redirect`, { redirect: 'manual' });
  t.is(res.status, 302);
  t.is(res.headers.get('location'), '/model');
  t.false(errors.some((e) => e.path === '/redirect'));
});
