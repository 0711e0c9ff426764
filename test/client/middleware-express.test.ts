// The Express decision middleware in front of a real Express 4 app, deciding through the real
// TPS server.
import test from 'ava';
import express, { type Request, type Response } from 'express';
import { createClient, type TpsClient } from '../../src/client/index.js';
import { tpsExpress, type Continue } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, stoppedServerUrl, uid } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let app: { url: string; close(): Promise<void> };

function expressApp(client: TpsClient) {
  const api = express();
  const actor = (req: Request) => ({ id: req.get('x-test-user') || 'anonymous', authenticated: true, role: req.get('x-test-role') || undefined });
  const base = { client, actor };
  const ok = (_req: Request, res: Response) => {
    const tps = res.locals.tps as Continue;
    res.json({ ok: true, decision: tps.evaluation.decision, synthetic: tps.evaluation.synthetic ?? false });
  };
  api.post('/customers', tpsExpress({ ...base, operationKey: 'customer.create' }), ok);
  api.put('/bank-accounts/:id', tpsExpress({
    ...base,
    operationKey: 'bank_account.update',
    verifyPasskey: (assertion, { challengeId, request }) => assertion === `ok:${challengeId}:${request.params.id}`,
  }), ok);
  api.get('/customers/:id', tpsExpress({ ...base, operationKey: 'customer.read_pii' }), (req, res) => {
    res.send({ customer: { id: req.params.id, name: 'Ada', email: 'ada@example.com' } });
  });
  api.get('/jsonp/customers/:id', tpsExpress({ ...base, operationKey: 'customer.read_pii' }), (req, res) => {
    res.jsonp({ customer: { id: req.params.id, name: 'Ada', email: 'ada@example.com' } });
  });
  api.post('/payments', tpsExpress({
    ...base,
    operationKey: 'payment_transaction.create',
    transaction: (req, defaults) => ({ ...defaults, metadata: { velocityWindowCount: Number(req.get('x-test-velocity') || 0) } }),
  }), ok);
  return api;
}


test.before(async () => {
  tps = await startTps();
  app = await listen(expressApp(createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 })));
});
test.after.always(async () => {
  await app?.close();
  await tps?.close();
});

async function call(path: string, method = 'GET', headers: Record<string, string> = {}) {
  const res = await fetch(app.url + path, { method, headers: { 'x-test-user': uid('user'), ...headers } });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}

test('allow continues with res.locals.tps', async (t) => {
  const res = await call('/customers', 'POST', {
    'x-svc-session-id': uid('sess'), 'x-svc-continuity': 'strength=0.9;new-device=0;signal-age=5', 'x-svc-recent-human-signal': new Date().toISOString(),
  });
  t.is(res.status, 200);
  t.like(res.body, { ok: true, decision: 'allow' });
});

test('step-up: 428 with the challenge, then the verified passkey retry is allowed', async (t) => {
  const headers = { 'x-test-user': uid('user'), 'x-svc-session-id': uid('sess') };
  const id = uid('ba');
  const first = await call(`/bank-accounts/${id}`, 'PUT', headers);
  t.is(first.status, 428);
  const { type, id: challengeId } = first.body.challenge;
  t.is(type, 'passkey');
  const retry = await call(`/bank-accounts/${id}`, 'PUT', { ...headers, 'x-svc-challenge-id': challengeId, 'x-svc-passkey-assertion': `ok:${challengeId}:${id}` });
  t.is(retry.status, 200);
  t.is(retry.body.decision, 'allow');
});

test('allow_redacted: res.send(object) is redacted; deny is 403 without the data', async (t) => {
  const redacted = await call(`/customers/${uid('c')}`, 'GET', { 'x-test-role': 'support' });
  t.is(redacted.status, 200);
  t.is(redacted.body.customer.name, 'Ada');
  t.is(redacted.body.customer.email, '***');
  const denied = await call(`/customers/${uid('c')}`, 'GET', { 'x-test-role': 'sales' });
  t.is(denied.status, 403);
  t.truthy(denied.body.telemetryId);
  t.is(denied.body.customer, undefined);
});

test('allow_redacted: res.jsonp is redacted too, with and without a callback', async (t) => {
  for (const query of ['', '?callback=show']) {
    const res = await fetch(`${app.url}/jsonp/customers/${uid('c')}${query}`, { headers: { 'x-test-user': uid('user'), 'x-test-role': 'support' } });
    t.is(res.status, 200);
    const text = await res.text();
    t.true(text.includes('"email":"***"'), text);
    t.false(text.includes('ada@example.com'), text);
    if (query) t.regex(text, /show\(/);
  }
});

test('throttle is 429 with retry-after', async (t) => {
  const res = await call('/payments', 'POST', { 'x-test-role': 'finance', 'x-test-velocity': '1000' });
  t.is(res.status, 429);
  t.regex(res.headers.get('retry-after') ?? '', /^\d+$/);
});

test('TPS down with failureMode closed: 503, handler not reached', async (t) => {
  const down = await stoppedServerUrl(() => startTps());
  const server = await listen(expressApp(createClient({ baseUrl: down, secretKey: tps.secretKey })));
  t.teardown(() => server.close());
  const res = await fetch(`${server.url}/customers`, { method: 'POST' });
  t.is(res.status, 503);
  t.is(((await res.json()) as { ok?: boolean }).ok, undefined);
});
