// Whose mistake an operation key TPS cannot take is, in Koa, Express and fetch-style apps served over
// HTTP in front of the real TPS. The browser's x-svc-operation-key header (when the app configured no
// key) that is malformed or names no operation is a 400 and no onError: the browser's mistake, not
// an outage. A key the app configured (string or function, or set by its transaction hook) that TPS
// does not know stays the 503 and onError of a misconfiguration.
import { request as httpRequest } from 'node:http';
import test from 'ava';
import express, { type Request as ExpressRequest, type Response as ExpressResponse } from 'express';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient, isTpsError, type TpsClient } from '../../src/client/index.js';
import { tpsExpress, tpsFetch, tpsKoa, type DecisionOptions } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, serveFetch, uid } from './fixtures.js';

type Framework = 'koa' | 'express' | 'fetch';
type Answer = { status: number; text: string; body: Record<string, any> };

let tps: Awaited<ReturnType<typeof startTps>>;
const servers: { close(): Promise<void> }[] = [];
const urls = {} as Record<Framework, string>;
/** The operation keys the middleware asked TPS about, and what it told onError. */
const asked: string[] = [];
const errors: unknown[] = [];

// Routes: the header chooses (/header); the app configures an unknown key as a string, a function,
// or through its transaction hook over a header-chosen key.
const UNKNOWN = 'no.such_operation';
const routes: Record<string, (base: DecisionOptions<any>) => DecisionOptions<any>> = {
  '/header': (base) => base,
  '/configured': (base) => ({ ...base, operationKey: UNKNOWN }),
  '/resolved': (base) => ({ ...base, operationKey: () => UNKNOWN }),
  '/rekeyed': (base) => ({ ...base, transaction: (_req: unknown, tx) => ({ ...tx, operationKey: UNKNOWN }) }),
};

function apps(client: TpsClient) {
  const counted: Pick<TpsClient, 'evaluate'> = {
    evaluate: (tx, options) => {
      asked.push(tx.operationKey);
      return client.evaluate(tx, options);
    },
  };
  const base: DecisionOptions<any> = { client: counted, actor: () => ({ id: uid('user'), authenticated: true }), onError: (err) => void errors.push(err) };

  const router = new Router();
  const koaOk = (ctx: Koa.Context) => (ctx.body = { ok: true });
  const api = express();
  const expressOk = (_req: ExpressRequest, res: ExpressResponse) => res.json({ ok: true });
  const guards: Record<string, (request: Request) => Promise<Response | null>> = {};
  for (const [path, options] of Object.entries(routes)) {
    router.post(path, tpsKoa(options(base)), koaOk);
    api.post(path, tpsExpress(options(base)), expressOk);
    guards[path] = tpsFetch(options(base));
  }
  const fetchApp = async (request: Request) => (await guards[new URL(request.url).pathname]!(request)) ?? Response.json({ ok: true });
  return { koa: new Koa().use(router.routes()).callback(), express: api, fetch: fetchApp };
}

// node:http rather than fetch: it sends a header value's characters U+0080–U+00FF as single bytes,
// as a browser may, and the app's server reads them back as those characters.
function post(framework: Framework, path: string, operationKey: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(urls[framework] + path, { method: 'POST', headers: { 'x-svc-operation-key': operationKey } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, text, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

test.before(async () => {
  tps = await startTps();
  const made = apps(createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 }));
  const koa = await listen(made.koa);
  const exp = await listen(made.express);
  const fetchStyle = await serveFetch(made.fetch);
  servers.push(koa, exp, fetchStyle);
  Object.assign(urls, { koa: koa.url, express: exp.url, fetch: fetchStyle.url });
});
test.after.always(async () => {
  for (const s of servers) await s.close();
  await tps?.close();
});

// Serial: each test reads what the shared counters saw during it.
test.beforeEach(() => {
  asked.length = 0;
  errors.length = 0;
});

for (const framework of ['koa', 'express', 'fetch'] as const) {
  test.serial(`[${framework}] a malformed x-svc-operation-key header is refused with 400 before TPS is asked, without echoing it or calling onError`, async (t) => {
    // A tab and a C1 control character (a raw 0x85 byte) inside, and one over TPS's 128 characters.
    for (const raw of ['evil\tpayload.create', 'evil\u0085payload.create', `evil.${'payload'.repeat(20)}`]) {
      const res = await post(framework, '/header', raw);
      t.is(res.status, 400, res.text);
      t.is(res.body.error.code, 'invalid_operation_key');
      t.regex(res.body.error.message, /x-svc-operation-key/);
      t.false(/evil|payload/.test(res.text), res.text);
    }
    t.deepEqual(asked, []);
    t.deepEqual(errors, []);
  });

  test.serial(`[${framework}] an x-svc-operation-key header naming no configured operation is a 400 unknown_operation, not an outage`, async (t) => {
    const res = await post(framework, '/header', UNKNOWN);
    t.is(res.status, 400, res.text);
    t.is(res.body.error.code, 'unknown_operation');
    t.regex(res.body.error.message, /x-svc-operation-key/);
    t.deepEqual(asked, [UNKNOWN], 'TPS decided it');
    t.deepEqual(errors, []);
    // A known one still goes through.
    const known = await post(framework, '/header', 'customer.create');
    t.is(known.status, 200, known.text);
  });

  test.serial(`[${framework}] a configured operation key TPS does not know stays a 503 and tells onError, whatever the header says`, async (t) => {
    for (const path of ['/configured', '/resolved', '/rekeyed']) {
      errors.length = 0;
      const res = await post(framework, path, 'customer.create');
      t.is(res.status, 503, `${path}: ${res.text}`);
      t.is(res.body.error.code, 'protection_unavailable', path);
      t.is(errors.length, 1, path);
      t.true(isTpsError(errors[0]) && errors[0].code === 'unknown_operation', path);
    }
  });
}
