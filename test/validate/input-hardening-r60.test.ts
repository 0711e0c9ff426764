// Over real HTTP: caller text in a key is never expanded into an error message (yup's `${…}`), no
// error answer grows past a bound, bodies must be UTF-8, a body read part-way leaves no stalled
// keep-alive connection, a `__proto__` key is named where it is, and content codings are read
// case-insensitively.
import http from 'node:http';
import zlib from 'node:zlib';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { get, post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord } from '../events/helpers.js';
import { samples } from '../core/evaluate-suite.js';

const test = anyTest as TestFn<{ tps: RunningTps }>;

test.before(async (t) => {
  t.context.tps = await startTps();
});
test.after.always(async (t) => t.context.tps?.close());

type Ctx = ExecutionContext<{ tps: RunningTps }>;
type Detail = { path: string; message: string };
const evaluate = (t: Ctx, body: unknown) => post(`${t.context.tps.url}/api/evaluate`, body, t.context.tps.secretKey);
const ingest = (t: Ctx, body: unknown) => post(`${t.context.tps.url}/api/events/ingest`, body, t.context.tps.secretKey);
const base = () => samples.createCustomer() as unknown as Record<string, unknown>;
const details = (res: { body: any }): Detail[] => res.body?.error?.details ?? [];

/** `levels` arrays, one in another, as JSON text: small to send, deep for anything that recurses. */
const deepText = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
/** A body's JSON with the string "@deep" (a placeholder) replaced by `levels` nested arrays. */
const withDeep = (body: unknown, levels: number) => JSON.stringify(body).replace('"@deep"', deepText(levels));

/** A 400 invalid_request, its answer small, with a detail at `path` (or under it) whose message echoes no value. */
function assertSmallRefusal(t: Ctx, res: { status: number; body: any }, path: string, options: { prefix?: boolean; maxBytes?: number } = {}): Detail | undefined {
  const size = Buffer.byteLength(JSON.stringify(res.body ?? null));
  t.is(res.status, 400, size < 4096 ? JSON.stringify(res.body) : `${size} bytes`);
  t.is(res.body?.error?.code, 'invalid_request');
  t.true(size < (options.maxBytes ?? 2048), `an answer of ${size} bytes`);
  const hit = details(res).find((d) => (options.prefix ? d.path.startsWith(path) : d.path === path));
  t.truthy(hit, `${path} in ${size < 4096 ? JSON.stringify(details(res)) : `${size} bytes`}`);
  // The message is about its path, never a printout (JSON, over lines) of the object the key sits in.
  if (hit) t.false(/["\n]/.test(hit.message), hit.message);
  return hit;
}

// 1. A key holding `${…}` is the caller's text, not a message template

test('a key named ${value} is named as it is: evaluate, rawSignals, ingest and the event query never print the object around it', async (t) => {
  const root = assertSmallRefusal(t, await evaluate(t, { ...base(), '${value}': 1 }), '${value}');
  t.is(root?.message, '${value} is not a known field');
  const signals = await evaluate(t, { ...base(), rawSignals: { '${value}': 'x', ok: true } });
  assertSmallRefusal(t, signals, 'rawSignals.${value}');
  t.deepEqual(details(signals).map((d) => d.message), [
    'rawSignals.${value} is not a valid signal name (letters, digits, _ . : -, at most 64)',
    'rawSignals.${value} must be a boolean or a number',
  ]);
  const spec = assertSmallRefusal(t, await evaluate(t, { ...base(), actor: { id: 'u1', '${spec}': 1 } }), 'actor.${spec}');
  t.is(spec?.message, 'actor.${spec} is not a known field');
  const summary = assertSmallRefusal(t, await ingest(t, ingestRecord({ requestSummary: { '${value}': 'x\u0000' } as never })), 'requestSummary.${value}');
  t.is(summary?.message, 'requestSummary.${value} must not contain NUL characters or unpaired surrogates');
  const query = assertSmallRefusal(t, await get(`${t.context.tps.url}/api/events?%24%7Bvalue%7D=x&%24%7BoriginalValue%7D=y`, t.context.tps.secretKey), '${value}');
  t.is(query?.message, '${value} is not a known field');
  t.is(details((await get(`${t.context.tps.url}/api/events?%24%7BoriginalValue%7D=y`, t.context.tps.secretKey)))[0]?.message, '${originalValue} is not a known field');
});

test('a ${value} key beside a deeply nested value is a small 400, not a 500 (evaluate and ingest)', async (t) => {
  // 30,000 arrays (60 KB, under the limit): a printout of them overflowed the stack, a 500.
  const deepEvaluate = withDeep({ ...base(), requestData: { '${value}': '@deep' } }, 30_000);
  assertSmallRefusal(t, await evaluate(t, deepEvaluate), 'requestData.${value}', { prefix: true });
  const deepIngest = withDeep(ingestRecord({ requestSummary: { '${value}': '@deep' } as never }), 30_000);
  assertSmallRefusal(t, await ingest(t, deepIngest), 'requestSummary.${value}', { prefix: true });
  const deepRoot = withDeep({ ...base(), '${value}': '@deep' }, 30_000);
  assertSmallRefusal(t, await evaluate(t, deepRoot), '${value}');
});

test('a few KB holding ${value} keys and nesting get an answer of bounded size (they got megabytes)', async (t) => {
  // Shallow enough to print: the printout grows with the square of the depth (2,000 levels: 8 MB).
  const keys = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`\${value}${i}`, '@inf']));
  const evaluateText = withDeep({ ...base(), requestData: { ...keys, d: '@deep' } }, 1500).replaceAll('"@inf"', '1e400');
  t.true(evaluateText.length < 8192);
  const evaluated = assertSmallRefusal(t, await evaluate(t, evaluateText), 'requestData.${value}0');
  t.is(evaluated?.message, 'requestData.${value}0 must be a finite number');
  const ingestText = withDeep(ingestRecord({ requestSummary: { ...keys, d: '@deep' } as never }), 1000).replaceAll('"@inf"', '1e400');
  assertSmallRefusal(t, await ingest(t, ingestText), 'requestSummary.${value}4');
});

test('an error lists at most 50 details and cuts a long path, so no body can make a large answer', async (t) => {
  const many = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, 1]));
  const wide = await evaluate(t, { ...base(), ...many });
  t.is(wide.status, 400);
  t.is(details(wide).length, 50);
  t.deepEqual(details(wide).slice(0, 2), [
    { path: 'k0', message: 'k0 is not a known field' },
    { path: 'k1', message: 'k1 is not a known field' },
  ]);
  const signals = await evaluate(t, { ...base(), rawSignals: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`bad key ${i}`, 'x'])) });
  t.is(signals.status, 400);
  t.is(details(signals).length, 50);

  // Keys of 16,000 characters, nested: each path is cut at 200 characters, its message with it.
  const long = 'k'.repeat(16_000);
  const res = await evaluate(t, { ...base(), requestData: { [long]: { [long]: { [long]: 'x\u0000' } } } });
  t.is(res.status, 400);
  t.true(Buffer.byteLength(JSON.stringify(res.body)) < 2048, `${Buffer.byteLength(JSON.stringify(res.body))} bytes`);
  const [cut] = details(res);
  t.is(cut?.path, `requestData.${long}`.slice(0, 200) + '…');
  t.is(cut?.message, `${cut?.path} must not contain NUL characters or unpaired surrogates`);
});

test('no error message echoes a value the caller sent', async (t) => {
  const secret = 'secret-value-7781';
  const res = await evaluate(t, { ...base(), actor: { id: `${secret}\u0000`, role: 5, sessionAgeMinutes: secret }, session: { continuityStrength: secret }, requestData: { amount: secret, other: `${secret}\u0000` }, rawSignals: { s: secret } });
  t.is(res.status, 400);
  t.true(details(res).length >= 5, JSON.stringify(details(res)));
  t.false(JSON.stringify(res.body).includes(secret), JSON.stringify(res.body));
});

// 2. Bodies are UTF-8

/** POSTs raw bytes with the given content-type (and more headers). */
async function postBytes(t: Ctx, path: string, bytes: Buffer, contentType: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${t.context.tps.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': contentType, authorization: `Bearer ${t.context.tps.secretKey}`, ...headers },
    body: new Uint8Array(bytes),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const latin1 = (body: unknown) => Buffer.from(JSON.stringify(body), 'latin1');

test('a declared charset other than UTF-8 is 415; bytes that are not UTF-8 are 400 invalid_json; a BOM is fine', async (t) => {
  // "CAFÉ" and "CAFÈ" in Latin-1: read leniently, both became "CAF\uFFFD", one id.
  for (const id of ['IBAN-CAF\u00c9', 'IBAN-CAF\u00c8']) {
    const body = { operationKey: 'bank_account.update', actor: { id: 'user_1' }, resource: { type: 'account', id } };
    const declared = await postBytes(t, '/api/evaluate', latin1(body), 'application/json; charset=iso-8859-1');
    t.is(declared.status, 415, JSON.stringify(declared.body));
    t.is(declared.body?.error?.code, 'unsupported_media_type');
    const undeclared = await postBytes(t, '/api/evaluate', latin1(body), 'application/json');
    t.is(undeclared.status, 400, JSON.stringify(undeclared.body));
    t.is(undeclared.body?.error?.code, 'invalid_json');
    t.regex(undeclared.body?.error?.message, /UTF-8/);
  }
  const record = ingestRecord({ actorId: 'jos\u00e9' });
  t.is((await postBytes(t, '/api/events/ingest', latin1(record), 'application/json; charset=ISO-8859-1')).status, 415);
  const badIngest = await postBytes(t, '/api/events/ingest', latin1(record), 'application/json');
  t.is(badIngest.status, 400, JSON.stringify(badIngest.body));
  t.is(badIngest.body?.error?.code, 'invalid_json');
  const utf16 = await postBytes(t, '/api/evaluate', Buffer.from(JSON.stringify(base()), 'utf16le'), 'application/json; charset=utf-16le');
  t.is(utf16.status, 415);

  // UTF-8, however it is said (or not), with or without a byte order mark, is read as before.
  const utf8 = Buffer.from(JSON.stringify({ ...base(), actor: { id: 'jos\u00e9' } }));
  for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json; charset="UTF-8"', 'application/json;charset=us-ascii', 'application/json; charset=utf-8;']) {
    t.is((await postBytes(t, '/api/evaluate', utf8, type)).status, 200, type);
  }
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8]);
  t.is((await postBytes(t, '/api/evaluate', bom, 'application/json')).status, 200);
  const ingested = await postBytes(t, '/api/events/ingest', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(record))]), 'application/json; charset=utf-8');
  t.is(ingested.status, 201, JSON.stringify(ingested.body));
  const stored = await get(`${t.context.tps.url}/api/events/${record.telemetryId}`, t.context.tps.secretKey);
  t.is(stored.body?.actorId, 'jos\u00e9');
});

// 3. A body read part-way

/**
 * One POST on `agent`, its body sent chunked (no content-length), in pieces of 16 KiB; resolves
 * with the status, the connection header and whether the agent reused a socket for it. Rejects
 * after `deadlineMs`: a connection that never answers is the fault under test, not a wait.
 */
function chunkedPost(t: Ctx, agent: http.Agent, path: string, body: Buffer, headers: Record<string, string> = {}, deadlineMs = 10_000): Promise<{ status: number; connection?: string; reused: boolean; body: any }> {
  const { hostname, port } = new URL(t.context.tps.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${t.context.tps.secretKey}`, 'transfer-encoding': 'chunked', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, connection: res.headers.connection, reused: req.reusedSocket, body: text ? JSON.parse(text) : undefined });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to POST ${path} within ${deadlineMs} ms`));
    }, deadlineMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    // A write after the server answered (and closed) may fail; the answer is what is tested.
    const send = (from: number) => {
      if (from >= body.length) return void req.end();
      if (req.destroyed) return;
      req.write(body.subarray(from, from + 16_384), () => send(from + 16_384));
    };
    send(0);
  });
}

test('a chunked body over the limit, or a broken gzip stream, leaves its keep-alive connection usable for the next request', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const valid = Buffer.from(JSON.stringify(base()));
  const oversized = Buffer.from(JSON.stringify({ ...base(), requestData: { pad: 'x'.repeat(200_000) } }));
  const brokenGzip = Buffer.concat([zlib.gzipSync(valid).subarray(0, 10), Buffer.alloc(100_000, 0x41)]);
  const oversizedRecord = Buffer.from(JSON.stringify(ingestRecord({ requestSummary: { pad: 'x'.repeat(200_000) } })));

  const first = await chunkedPost(t, agent, '/api/evaluate', valid);
  t.is(first.status, 200);
  let kept = 0;
  for (const [path, body, headers, status] of [
    ['/api/evaluate', oversized, {}, 413],
    ['/api/events/ingest', oversizedRecord, {}, 413],
    ['/api/evaluate', brokenGzip, { 'content-encoding': 'gzip' }, 400],
  ] as const) {
    const refused = await chunkedPost(t, agent, path, body, headers);
    t.is(refused.status, status, `${path}: ${JSON.stringify(refused.body)}`);
    // Never a kept connection that holds the next request behind the unread rest of a body: the
    // rest was read and dropped and the same connection answers it, or, past the drain's bounds
    // (a machine stalled for a second), the refusal said connection: close and a new one does.
    const next = await chunkedPost(t, agent, '/api/evaluate', valid);
    t.is(next.status, 200, path);
    if (refused.connection === 'close') continue;
    t.true(next.reused, `${path}: the next request went on the same connection`);
    kept++;
  }
  // Each drain takes milliseconds: all three stalling past the bound would be a drain that never works.
  t.true(kept > 0, 'a refused body was drained and its connection kept');
});

test('a body far past what is drained after a refusal gets an answer that closes its connection', async (t) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const huge = Buffer.from(JSON.stringify({ ...base(), requestData: { pad: 'x'.repeat(3 * 1024 * 1024) } }));
  let refused: Awaited<ReturnType<typeof chunkedPost>> | undefined;
  try {
    refused = await chunkedPost(t, agent, '/api/evaluate', huge);
  } catch (err) {
    // The server may close while the client still writes; a reset is a closed connection too.
    t.regex(String((err as Error).message), /ECONNRESET|EPIPE|socket hang up/);
  }
  if (refused) {
    t.is(refused.status, 413);
    t.is(refused.connection, 'close');
  }
  const next = await chunkedPost(t, agent, '/api/evaluate', Buffer.from(JSON.stringify(base())));
  t.is(next.status, 200);
  t.false(next.reused, 'a fresh connection');
});

// 4. `__proto__`

test('a __proto__ key is 400 invalid_request naming its path, on evaluate and ingest; constructor and prototype are ordinary keys', async (t) => {
  const cases: [string, string][] = [
    [JSON.stringify({ ...base(), requestData: { '@proto': 1 } }), 'requestData.__proto__'],
    [JSON.stringify({ ...base(), rawSignals: { '@proto': true } }), 'rawSignals.__proto__'],
    [JSON.stringify({ ...base(), requestData: { list: [{ ok: 1 }, { '@proto': { a: 1 } }] } }), 'requestData.list[1].__proto__'],
    [JSON.stringify({ '@proto': {}, ...base() }), '__proto__'],
  ];
  for (const [text, path] of cases) {
    const res = await evaluate(t, text.replace('"@proto"', '"__proto__"'));
    t.is(res.status, 400, path);
    t.is(res.body?.error?.code, 'invalid_request', JSON.stringify(res.body));
    t.deepEqual(details(res), [{ path, message: `${path} is a key named __proto__, which is not accepted` }]);
  }
  // Spelt with escapes, it is the same key.
  const escaped = await evaluate(t, JSON.stringify({ ...base(), requestData: { '@proto': 1 } }).replace('"@proto"', '"\\u005f_proto__"'));
  t.deepEqual(details(escaped).map((d) => d.path), ['requestData.__proto__']);
  const ingested = await ingest(t, JSON.stringify(ingestRecord({ requestSummary: { inner: { '@proto': 1 } } as never })).replace('"@proto"', '"__proto__"'));
  t.is(ingested.status, 400);
  t.is(ingested.body?.error?.code, 'invalid_request');
  t.deepEqual(details(ingested).map((d) => d.path), ['requestSummary.inner.__proto__']);
  // Deep in the body, its path is cut at 200 characters, as every path is.
  const nested = JSON.stringify({ ...base(), requestData: { d: '@nest' } }).replace('"@nest"', `${'{"a":'.repeat(150)}{"__proto__":1}${'}'.repeat(150)}`);
  t.deepEqual(details(await evaluate(t, nested)).map((d) => d.path), [`${`requestData.d${'.a'.repeat(150)}.__proto__`.slice(0, 200)}…`]);

  t.is((await evaluate(t, { ...base(), requestData: { constructor: { prototype: 1 }, prototype: 2 } })).status, 200);
  // Still not JSON: invalid_json as before.
  const broken = await evaluate(t, '{"__proto__": ');
  t.is(broken.body?.error?.code, 'invalid_json');
});

// 5. Content codings

test('content-encoding is read case-insensitively, and x-gzip is gzip', async (t) => {
  const gz = (body: unknown) => zlib.gzipSync(Buffer.from(JSON.stringify(body)));
  for (const coding of ['GZIP', 'x-gzip', 'X-Gzip', ' gzip ']) {
    t.is((await postBytes(t, '/api/evaluate', gz(base()), 'application/json', { 'content-encoding': coding })).status, 200, coding);
    t.is((await postBytes(t, '/api/events/ingest', gz(ingestRecord()), 'application/json', { 'content-encoding': coding })).status, 201, coding);
  }
  const deflated = zlib.deflateSync(Buffer.from(JSON.stringify(base())));
  t.is((await postBytes(t, '/api/evaluate', deflated, 'application/json', { 'content-encoding': 'Deflate' })).status, 200);
  t.is((await postBytes(t, '/api/evaluate', Buffer.from(JSON.stringify(base())), 'application/json', { 'content-encoding': 'Identity' })).status, 200);
  t.is((await postBytes(t, '/api/evaluate', gz(base()), 'application/json', { 'content-encoding': 'compress' })).status, 415);
});
