import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import anyTest, { type TestFn } from 'ava';
import { post, REPO_ROOT, startTps, type RunningTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// Every error status of CONTRACT that the evaluate endpoint can produce, over real HTTP.
const test = anyTest as TestFn<{ tps: RunningTps }>;

test.before(async (t) => {
  t.context.tps = await startTps({ env: { TPS_MAX_BODY_BYTES: '2048', TPS_KEY_CACHE_MS: '0' } });
});
test.after.always(async (t) => t.context.tps?.close());

const url = (t: { context: { tps: RunningTps } }, p = '/api/evaluate') => `${t.context.tps.url}${p}`;

function assertError(t: any, res: { status: number; headers: Headers; body: any }, status: number, code: string): void {
  t.is(res.status, status, JSON.stringify(res.body));
  t.is(res.body?.error?.code, code);
  t.is(typeof res.body.error.message, 'string');
  t.truthy(res.headers.get('x-request-id'));
  t.false(JSON.stringify(res.body).includes('    at '), 'no stack trace');
}

test('400 invalid_json names no field but says the body is not JSON', async (t) => {
  assertError(t, await post(url(t), '{"operationKey": ', t.context.tps.secretKey), 400, 'invalid_json');
});

test.serial('400 invalid_request lists every offending path', async (t) => {
  const res = await post(
    url(t),
    {
      operationKey: 'customer.create',
      actor: { id: 42, roles: 'admin' },
      resource: { type: 'customer' },
      session: { continuityStrength: 1.5, recentHumanSignalAt: 'yesterday' },
      metadata: { localHour: 24, requestedCount: -1, surprise: true },
      challengeResult: { type: 'sms' },
      rawSignals: { botScore: 'high' },
    },
    t.context.tps.secretKey,
  );
  assertError(t, res, 400, 'invalid_request');
  const paths = res.body.error.details.map((d: { path: string }) => d.path).sort();
  t.deepEqual(paths, [
    'actor.id',
    'actor.roles',
    'challengeResult.type',
    'metadata.localHour',
    'metadata.requestedCount',
    'metadata.surprise',
    'rawSignals.botScore',
    'resource.id',
    'session.continuityStrength',
    'session.recentHumanSignalAt',
  ]);
  const byPath = Object.fromEntries(res.body.error.details.map((d: { path: string; message: string }) => [d.path, d.message]));
  t.is(byPath['session.continuityStrength'], 'session.continuityStrength must be at most 1');
  t.is(byPath['metadata.localHour'], 'metadata.localHour must be at most 23');
  t.is(byPath['metadata.surprise'], 'metadata.surprise is not a known field');
  t.is(await t.context.tps.tps.events.count(), 0, 'nothing stored for a rejected request');
});

test('400 invalid_request for a body that is not an object, and for missing required fields', async (t) => {
  const arr = await post(url(t), [], t.context.tps.secretKey);
  assertError(t, arr, 400, 'invalid_request');
  const empty = await post(url(t), {}, t.context.tps.secretKey);
  assertError(t, empty, 400, 'invalid_request');
  t.deepEqual(empty.body.error.details.map((d: { path: string }) => d.path), ['operationKey', 'actor', 'resource']);
});

test('401 missing_api_key and invalid_api_key', async (t) => {
  const missing = await post(url(t), samples.createCustomer());
  assertError(t, missing, 401, 'missing_api_key');
  t.is(missing.headers.get('www-authenticate'), 'Bearer');
  assertError(t, await post(url(t), samples.createCustomer(), 'svc_sec_not-a-real-key'), 401, 'invalid_api_key');
  assertError(t, await post(url(t), samples.createCustomer(), 'something-else'), 401, 'invalid_api_key');
  assertError(t, await post(url(t), samples.createCustomer(), undefined, { authorization: 'Basic abc' }), 401, 'missing_api_key');
});

test('403 publishable_key_not_allowed', async (t) => {
  assertError(t, await post(url(t), samples.createCustomer(), t.context.tps.publishableKey), 403, 'publishable_key_not_allowed');
});

test('404 not_found for an unknown route, with the JSON body', async (t) => {
  const res = await fetch(url(t, '/api/nothing-here'));
  assertError(t, { status: res.status, headers: res.headers, body: await res.json() }, 404, 'not_found');
});

test('413 payload_too_large over TPS_MAX_BODY_BYTES', async (t) => {
  const body = { ...samples.createCustomer(), metadata: { notes: 'x'.repeat(900), changedFields: Array.from({ length: 100 }, (_, i) => `field_${i}`) } };
  assertError(t, await post(url(t), body, t.context.tps.secretKey), 413, 'payload_too_large');
});

test('415 unsupported_media_type for a body that is not JSON', async (t) => {
  const res = await fetch(url(t), { method: 'POST', headers: { authorization: `Bearer ${t.context.tps.secretKey}`, 'content-type': 'text/plain' }, body: 'hello' });
  assertError(t, { status: res.status, headers: res.headers, body: await res.json() }, 415, 'unsupported_media_type');
});

test('422 unknown_operation', async (t) => {
  const res = await post(url(t), { ...samples.createCustomer(), operationKey: 'customer.delete_everything' }, t.context.tps.secretKey);
  assertError(t, res, 422, 'unknown_operation');
  t.is(res.body.error.details[0].path, 'operationKey');
});

test('a revoked key stops working at once, in process and through the CLI', async (t) => {
  const { createKeyPair } = await import('../../src/auth/keys.js');
  const a = await createKeyPair(t.context.tps.tps.keyStore, 'revocation');
  t.is((await post(url(t), samples.createCustomer(), a.secretKey)).status, 200);
  await t.context.tps.tps.keys.revoke(a.secret.id);
  assertError(t, await post(url(t), samples.createCustomer(), a.secretKey), 401, 'invalid_api_key');

  const b = await createKeyPair(t.context.tps.tps.keyStore, 'revocation-cli');
  t.not((await post(url(t), samples.createCustomer(), b.secretKey)).status, 401);
  const cli = spawnSync(process.execPath, [path.join(REPO_ROOT, 'bin/tps.js'), 'keys', 'revoke', b.secret.id], {
    env: { ...process.env, DATABASE_URL: t.context.tps.databaseUrl },
    encoding: 'utf8',
  });
  t.is(cli.status, 0, cli.stderr);
  t.regex(cli.stdout, /revoked key_/);
  assertError(t, await post(url(t), samples.createCustomer(), b.secretKey), 401, 'invalid_api_key');
});

test('every response carries x-request-id, and a sane incoming one is echoed', async (t) => {
  const res = await post(url(t), samples.createCustomer(), t.context.tps.secretKey, { 'x-request-id': 'req-abc.123' });
  t.is(res.headers.get('x-request-id'), 'req-abc.123');
  const health = await fetch(url(t, '/healthz'));
  t.truthy(health.headers.get('x-request-id'));
});

/** Sends `request` as raw bytes and reads the answer until the server closes the connection. */
async function rawAnswer(t: { context: { tps: RunningTps } }, request: string) {
  const socket = net.connect(Number(new URL(t.context.tps.url).port), '127.0.0.1');
  socket.on('error', () => undefined); // a reset after the answer: what arrived is what counts
  socket.write(request);
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('close', () => resolve());
  });
  const text = Buffer.concat(chunks).toString('latin1');
  const split = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
  const headers = new Headers(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
  const bodyText = text.slice(split + 4);
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = bodyText;
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body, bodyText };
}

test("what Node's HTTP parser refuses is answered in CONTRACT's JSON with an x-request-id, never echoing the request", async (t) => {
  const filler = 'q'.repeat(20_000);
  const cases: [string, string, number][] = [
    ['a 20 KB query string', `GET /api/events?operationKey=${filler} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 431],
    ['a 20 KB header', `POST /api/evaluate HTTP/1.1\r\nHost: localhost\r\nx-filler: ${filler}\r\ncontent-length: 2\r\n\r\n{}`, 431],
    ['a malformed request line', 'NOT AN HTTP REQUEST LINE\r\n\r\n', 400],
    ['a malformed content-length', `POST /api/evaluate HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\ncontent-length: 12abc\r\n\r\n{}`, 400],
  ];
  for (const [what, request, status] of cases) {
    const res = await rawAnswer(t, request);
    t.is(res.status, status, what);
    t.is(res.headers.get('content-type'), 'application/json; charset=utf-8', what);
    t.is(res.headers.get('connection'), 'close', what);
    t.is(Number(res.headers.get('content-length')), Buffer.byteLength(res.bodyText), what);
    t.regex(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, what);
    t.is((res.body as any)?.error?.code, 'invalid_request', what);
    t.is(typeof (res.body as any).error.message, 'string', what);
    t.false(/qqqq|NOT AN|12abc/.test(res.bodyText), `${what}: nothing of the request is echoed`);
  }
  t.is((await fetch(url(t, '/healthz'))).status, 200, 'the server goes on serving');
});
