// The Koa decision middleware in front of a real Koa app, deciding through the real TPS server:
// every decision path, the verifier retry loop, redaction of a real response, and failing closed.
import test from 'ava';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient, type TpsClient } from '../../src/client/index.js';
import { tpsKoa, type Continue, type KoaDecisionOptions } from '../../src/middleware/index.js';
import type { EvaluateRequest } from '../../src/api/types.js';
import { startTps } from '../helpers/tps.js';
import { listen, stoppedServerUrl, uid } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let app: { url: string; close(): Promise<void> };
const verified: { proof: string; challengeId?: string; operationKey: string }[] = [];
const errors: unknown[] = [];

/** The test's stand-in for real authentication: the actor comes from test headers. */
const actor = (ctx: Koa.Context) => ({ id: ctx.get('x-test-user') || 'anonymous', authenticated: true, role: ctx.get('x-test-role') || undefined });

function koaApp(client: TpsClient, extra: Partial<KoaDecisionOptions> = {}) {
  const base = { client, actor, ...extra };
  const router = new Router();
  const ok = (ctx: Koa.Context) => {
    const tps = ctx.state.tps as Continue;
    ctx.body = { ok: true, decision: tps.evaluation.decision, synthetic: tps.evaluation.synthetic ?? false };
  };
  router.post('/customers', tpsKoa({ ...base, operationKey: 'customer.create' }), ok);
  router.put('/bank-accounts/:id', tpsKoa({
    ...base,
    operationKey: 'bank_account.update',
    verifyPasskey: (assertion, { challengeId, transaction }) => {
      verified.push({ proof: assertion, challengeId, operationKey: transaction.operationKey });
      if (assertion === 'explode') throw new Error('verifier crashed');
      return assertion === `valid-assertion-for-${challengeId}`;
    },
    onError: (err) => errors.push(err),
  }), ok);
  router.get('/customers/:id', tpsKoa({ ...base, operationKey: 'customer.read_pii' }), (ctx) => {
    ctx.body = { customer: { id: ctx.params.id, name: 'Ada', email: 'ada@example.com', phone: '+44 1' } };
  });
  router.get('/profiles/:id', tpsKoa({ ...base, operationKey: 'customer.read_pii', redact: false }), (ctx) => {
    const record = { id: ctx.params.id, name: 'Ada', email: 'ada@example.com' };
    ctx.body = (ctx.state.tps as Continue).redact(record, { base: 'customer' });
  });
  router.post('/payments', tpsKoa({
    ...base,
    operationKey: 'payment_transaction.create',
    transaction: (ctx, defaults): EvaluateRequest => ({
      ...defaults,
      requestData: { amount: Number(ctx.get('x-test-amount') || 10), currency: 'EUR' },
      metadata: { velocityWindowCount: Number(ctx.get('x-test-velocity') || 0) },
    }),
    verifyProofToken: (token, { challengeId }) => token === `signed:${challengeId}`,
  }), ok);
  router.post('/any', tpsKoa(base), ok);
  const koa = new Koa();
  koa.use(router.routes());
  return koa;
}


test.before(async () => {
  tps = await startTps();
  app = await listen(koaApp(createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 })).callback());
});
test.after.always(async () => {
  await app?.close();
  await tps?.close();
});

const continuity = (sessionId: string, humanAgo?: number) => ({
  'x-svc-session-id': sessionId,
  'x-svc-tab-id': uid('tab'),
  'x-svc-continuity': `strength=0.9;new-device=0${humanAgo === undefined ? '' : `;signal-age=${humanAgo}`}`,
  ...(humanAgo === undefined ? {} : { 'x-svc-recent-human-signal': new Date(Date.now() - humanAgo * 1000).toISOString() }),
});

async function call(path: string, init: { method?: string; headers?: Record<string, string> } = {}) {
  const res = await fetch(app.url + path, { method: init.method ?? 'GET', headers: { 'x-test-user': uid('user'), ...init.headers } });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}

test('allow continues to the handler, with the session read from the x-svc-* headers', async (t) => {
  const res = await call('/customers', { method: 'POST', headers: continuity(uid('sess'), 5) });
  t.is(res.status, 200);
  t.like(res.body, { ok: true, decision: 'allow', synthetic: false });
});

test('step_up_required answers 428 naming the challenge; a verified passkey retry is allowed', async (t) => {
  const headers = { ...continuity(uid('sess')), 'x-test-user': uid('user') };
  const path = `/bank-accounts/${uid('ba')}`;
  const first = await call(path, { method: 'PUT', headers });
  t.is(first.status, 428);
  t.is(first.body.challenge.type, 'passkey');
  const challengeId: string = first.body.challenge.id;
  t.truthy(challengeId);
  t.is(first.headers.get('x-svc-challenge-id'), challengeId);
  t.truthy(first.body.telemetryId);

  const retry = await call(path, {
    method: 'PUT',
    headers: { ...headers, 'x-svc-challenge-id': challengeId, 'x-svc-passkey-assertion': `valid-assertion-for-${challengeId}` },
  });
  t.is(retry.status, 200);
  t.is(retry.body.decision, 'allow');
  // Tests run concurrently and share the app, so look the call up by its challenge id.
  t.truthy(verified.find((v) => v.challengeId === challengeId && v.operationKey === 'bank_account.update' && v.proof === `valid-assertion-for-${challengeId}`));

  // The challenge is single-use: replaying the same proof earns a fresh challenge, not an allow.
  const replay = await call(path, {
    method: 'PUT',
    headers: { ...headers, 'x-svc-challenge-id': challengeId, 'x-svc-passkey-assertion': `valid-assertion-for-${challengeId}` },
  });
  t.is(replay.status, 428);
  t.not(replay.body.challenge.id, challengeId);
});

test('a failed or crashing verifier reports passed:false and the request is denied', async (t) => {
  for (const assertion of ['forged', 'explode']) {
    const headers = { ...continuity(uid('sess')), 'x-test-user': uid('user') };
    const path = `/bank-accounts/${uid('ba')}`;
    const first = await call(path, { method: 'PUT', headers });
    t.is(first.status, 428);
    const retry = await call(path, { method: 'PUT', headers: { ...headers, 'x-svc-challenge-id': first.body.challenge.id, 'x-svc-passkey-assertion': assertion } });
    t.is(retry.status, 403);
    t.is(retry.body.decision, 'deny');
  }
  t.true(errors.some((e) => e instanceof Error && e.message === 'verifier crashed'));
});

test('a proof header without a configured verifier is ignored: still challenged', async (t) => {
  const headers = { ...continuity(uid('sess')), 'x-test-user': uid('user') };
  const path = `/bank-accounts/${uid('ba')}`;
  const first = await call(path, { method: 'PUT', headers });
  const retry = await call(path, { method: 'PUT', headers: { ...headers, 'x-svc-challenge-id': first.body.challenge.id, 'x-svc-proof-token': 'anything' } });
  t.is(retry.status, 428);
});

test('allow_redacted: the real JSON response is redacted after the handler', async (t) => {
  const res = await call(`/customers/${uid('c')}`, { headers: { 'x-test-role': 'support' } });
  t.is(res.status, 200);
  t.is(res.body.customer.name, 'Ada');
  t.is(res.body.customer.email, '***');
  const profile = await call(`/profiles/${uid('c')}`, { headers: { 'x-test-role': 'support' } });
  t.is(profile.body.name, 'Ada');
  t.is(profile.body.email, '***');
});

test('deny answers 403 with the telemetryId and never reaches the handler', async (t) => {
  const res = await call(`/customers/${uid('c')}`, { headers: { 'x-test-role': 'sales' } });
  t.is(res.status, 403);
  t.like(res.body, { decision: 'deny', error: { code: 'transaction_denied' } });
  t.truthy(res.body.telemetryId);
  t.is(res.body.customer, undefined);
});

test('throttle answers 429 with retry-after', async (t) => {
  const res = await call('/payments', { method: 'POST', headers: { 'x-test-role': 'finance', 'x-test-velocity': '1000' } });
  t.is(res.status, 429);
  t.regex(res.headers.get('retry-after') ?? '', /^\d+$/);
  t.is(res.body.decision, 'throttle');
});

test('a proof_token challenge (large payment) is satisfied by a verified x-svc-proof-token retry', async (t) => {
  const headers = { 'x-test-user': uid('user'), 'x-test-role': 'finance', 'x-test-amount': '25000', 'x-svc-session-id': uid('sess') };
  const first = await call('/payments', { method: 'POST', headers });
  t.is(first.status, 428);
  t.is(first.body.challenge.type, 'proof_token');
  const challengeId = first.body.challenge.id;
  const forged = await call('/payments', { method: 'POST', headers: { ...headers, 'x-svc-challenge-id': challengeId, 'x-svc-proof-token': 'unsigned' } });
  t.is(forged.status, 403);
  const again = await call('/payments', { method: 'POST', headers });
  t.is(again.status, 428);
  const retry = await call('/payments', {
    method: 'POST',
    headers: { ...headers, 'x-svc-challenge-id': again.body.challenge.id, 'x-svc-proof-token': `signed:${again.body.challenge.id}` },
  });
  t.is(retry.status, 200);
  t.is(retry.body.decision, 'allow');
});

test('without a configured operation the x-svc-operation-key header names it; none at all is a 400', async (t) => {
  const named = await call('/any', { method: 'POST', headers: { ...continuity(uid('sess'), 5), 'x-svc-operation-key': 'customer.create' } });
  t.is(named.status, 200);
  const missing = await call('/any', { method: 'POST' });
  t.is(missing.status, 400);
  t.is(missing.body.error.code, 'missing_operation_key');
  // The browser's mistake, not an outage (middleware-operation-header.test.ts).
  const unknown = await call('/any', { method: 'POST', headers: { 'x-svc-operation-key': 'no.such_operation' } });
  t.is(unknown.status, 400);
  t.is(unknown.body.error.code, 'unknown_operation');
});

test('TPS down: closed and throw answer 503, open reaches the handler marked synthetic', async (t) => {
  const down = await stoppedServerUrl(() => startTps());
  const results: Record<string, { status: number; body: Record<string, any> }> = {};
  for (const mode of ['closed', 'throw', 'open'] as const) {
    const server = await listen(koaApp(createClient({ baseUrl: down, secretKey: tps.secretKey, failureMode: mode })).callback());
    const res = await fetch(`${server.url}/customers`, { method: 'POST' });
    results[mode] = { status: res.status, body: await res.json() as Record<string, any> };
    await server.close();
  }
  // Not a 403 "blocked": the request was not judged (middleware-outage.test.ts).
  t.is(results.closed!.status, 503);
  t.is(results.closed!.body.error.code, 'protection_unavailable');
  t.is(results.throw!.status, 503);
  t.is(results.throw!.body.error.code, 'protection_unavailable');
  t.is(results.open!.status, 200);
  t.true(results.open!.body.synthetic);
});

test('an unknown decision from the server fails closed, even with failureMode open', async (t) => {
  const newer = await listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ decision: 'allow_later', telemetryId: 'tel_future', score: 1, reasons: [] }));
  });
  t.teardown(() => newer.close());
  const server = await listen(koaApp(createClient({ baseUrl: newer.url, secretKey: tps.secretKey, failureMode: 'open' })).callback());
  t.teardown(() => server.close());
  const res = await fetch(`${server.url}/customers`, { method: 'POST' });
  t.is(res.status, 503);
  t.is(((await res.json()) as { ok?: boolean }).ok, undefined);
});
