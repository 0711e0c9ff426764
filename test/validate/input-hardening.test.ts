import net from 'node:net';
import zlib from 'node:zlib';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import { runFixtures } from '../../src/fixtures/suite.js';
import { evaluateRequestSchema, validateEvaluateRequest } from '../../src/validate/evaluateRequest.js';
import { compileFastAccept } from '../../src/validate/fastAccept.js';
import { check, MAX_NESTING, yup } from '../../src/validate/kit.js';
import { MAX_CLOCK_SKEW_MS } from '../../src/validate/timestamp.js';
import { tempConfig } from '../helpers/config.js';
import { runScript } from '../helpers/script.js';
import { get, post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord } from '../events/helpers.js';
import { samples } from '../core/evaluate-suite.js';

// Request validation against hostile input, over real HTTP on PostgreSQL (whose group commit sends
// a whole batch as one jsonb parameter, so one bad string could fail other callers' commits).
const test = anyTest as TestFn<{ tps: RunningTps }>;

test.before(async (t) => {
  t.context.tps = await startTps({ store: 'postgres' });
});
test.after.always(async (t) => t.context.tps?.close());

type Ctx = ExecutionContext<{ tps: RunningTps }>;
const evaluate = (t: Ctx, body: unknown) => post(`${t.context.tps.url}/api/evaluate`, body, t.context.tps.secretKey);
const ingest = (t: Ctx, body: unknown) => post(`${t.context.tps.url}/api/events/ingest`, body, t.context.tps.secretKey);
const base = () => samples.createCustomer() as unknown as Record<string, any>;
const with_ = (edit: (b: Record<string, any>) => void) => {
  const b = base();
  edit(b);
  return b;
};

/** A 400 invalid_request whose details name `path` (or a path starting with it, for `prefix`). */
function assertRefused(t: Ctx, res: { status: number; body: any }, path: string, options: { prefix?: boolean; message?: RegExp } = {}): void {
  t.is(res.status, 400, JSON.stringify(res.body));
  t.is(res.body?.error?.code, 'invalid_request');
  const details: { path: string; message: string }[] = res.body?.error?.details ?? [];
  const hit = details.find((d) => (options.prefix ? d.path.startsWith(path) : d.path === path));
  t.truthy(hit, `${path} in ${JSON.stringify(details)}`);
  if (hit && options.message) t.regex(hit.message, options.message);
}

/** The compiled fast path and yup agree on a body (the fast path may only accept what yup accepts). */
const fast = compileFastAccept(evaluateRequestSchema as unknown as yup.Schema);
function assertBothPaths(t: Ctx, body: unknown, valid: boolean): void {
  const reference = check(evaluateRequestSchema as unknown as yup.Schema<unknown>, body);
  t.is(reference.ok, valid, JSON.stringify(reference));
  t.is(fast(body), valid);
  t.deepEqual(validateEvaluateRequest(body), reference);
}

/**
 * One HTTP/1.1 request written to the socket as given, so the test decides exactly what goes on the
 * wire (no content-length or transfer-encoding a client library would add).
 */
function rawRequest(url: string, head: string[], body?: Buffer): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      const rest = text.slice(split + 4);
      resolve({ status, body: rest ? JSON.parse(rest) : undefined });
    });
    socket.write(`${[...head, `host: ${hostname}:${port}`, 'connection: close'].join('\r\n')}\r\n\r\n`);
    if (body) socket.write(body);
  });
}
const postHead = (t: Ctx, path: string, ...headers: string[]) => [`POST ${path} HTTP/1.1`, `authorization: Bearer ${t.context.tps.secretKey}`, ...headers];

// 1. NUL, control characters and unpaired surrogates

const BAD_STRINGS: [string, (b: Record<string, any>) => void][] = [
  ['actor.id', (b) => (b.actor.id = 'user\u0000')],
  ['actor.id', (b) => (b.actor.id = 'user\u0007')],
  ['resource.id', (b) => (b.resource.id = 'cus_\ud800')],
  ['resource.type', (b) => (b.resource.type = '\udc00customer')],
  ['operationKey', (b) => (b.operationKey = 'customer.create\u0000')],
  ['requestData', (b) => (b.requestData = { ['memo\u0000']: 'x' })],
  ['requestData.memo', (b) => (b.requestData = { memo: 'a\u0000b' })],
  ['requestData.items[1].note', (b) => (b.requestData = { items: [{ note: 'ok' }, { note: '\ud83d' }] })],
  ['metadata.notes', (b) => (b.metadata = { notes: 'x\u0000' })],
];

test('NUL, control characters or an unpaired surrogate in an identifier or requestData is a 400 naming the field, on both validation paths', async (t) => {
  for (const [path, edit] of BAD_STRINGS) {
    const body = with_(edit);
    assertRefused(t, await evaluate(t, body), path);
    assertBothPaths(t, body, false);
  }
  // Well-formed text is fine: an emoji (a surrogate pair) in an id, a newline in a free-text value.
  for (const body of [with_((b) => (b.actor.id = 'user_😀')), with_((b) => (b.requestData = { memo: 'line 1\nline 2', nested: { list: ['a', 1, true, null] } }))]) {
    t.is((await evaluate(t, body)).status, 200);
    assertBothPaths(t, body, true);
  }
});

test('a refused string cannot fail the commit of requests sent at the same time', async (t) => {
  const bad = with_((b) => (b.actor.id = 'user\u0000'));
  const answers = await Promise.all([evaluate(t, bad), ...Array.from({ length: 8 }, () => evaluate(t, base()))]);
  assertRefused(t, answers[0]!, 'actor.id');
  t.deepEqual(answers.slice(1).map((a) => a.status), Array(8).fill(200));

  const ingests = await Promise.all([ingest(t, ingestRecord({ actorId: 'user\ud800' })), ...Array.from({ length: 4 }, () => ingest(t, ingestRecord()))]);
  assertRefused(t, ingests[0]!, 'actorId');
  t.deepEqual(ingests.slice(1).map((a) => a.status), Array(4).fill(201));
});

test('ingest refuses NUL or unpaired surrogates in its identifiers, naming each', async (t) => {
  const res = await ingest(t, ingestRecord({ operationKey: 'op\u0000', actorId: '\ud800', resourceType: 'in\u001fvoice', resourceId: 'inv\u0000' }));
  for (const path of ['operationKey', 'actorId', 'resourceType', 'resourceId']) assertRefused(t, res, path);
});

test('a NUL in an event query parameter or in the event path is a 400, not a 500', async (t) => {
  const { url, secretKey } = t.context.tps;
  assertRefused(t, await get(`${url}/api/events?actorId=%00`, secretKey), 'actorId');
  assertRefused(t, await get(`${url}/api/events?resourceId=r%01`, secretKey), 'resourceId');
  assertRefused(t, await get(`${url}/api/events/stream?operationKey=%00`, secretKey), 'operationKey');
  assertRefused(t, await get(`${url}/api/events/%00`, secretKey), 'telemetryId');
  t.is((await get(`${url}/api/events/no-such-event`, secretKey)).status, 404);
});

// 2. A body that is not what its content-encoding says

test('a body that is not gzip under content-encoding: gzip is 400 invalid_json; an unknown encoding is 415', async (t) => {
  const json = Buffer.from(JSON.stringify(base()));
  for (const [path, body] of [['/api/evaluate', json], ['/api/events/ingest', Buffer.from(JSON.stringify(ingestRecord()))]] as const) {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await rawRequest(t.context.tps.url, [...postHead(t, path, 'content-type: application/json', `content-encoding: ${encoding}`, `content-length: ${body.length}`)], body);
      t.is(res.status, 400, `${path} ${encoding}: ${JSON.stringify(res.body)}`);
      t.is(res.body?.error?.code, 'invalid_json');
    }
    const unknown = await rawRequest(t.context.tps.url, [...postHead(t, path, 'content-type: application/json', 'content-encoding: compress', `content-length: ${body.length}`)], body);
    t.is(unknown.status, 415);
    t.is(unknown.body?.error?.code, 'unsupported_media_type');
    t.regex(unknown.body?.error?.message, /content-encoding/);
  }
  const gzipped = zlib.gzipSync(json);
  const ok = await rawRequest(t.context.tps.url, [...postHead(t, '/api/evaluate', 'content-type: application/json', 'content-encoding: gzip', `content-length: ${gzipped.length}`)], gzipped);
  t.is(ok.status, 200, 'a real gzip body is read');
});

// 3. Nesting

const nested = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};

test(`requestData and requestSummary nest at most ${MAX_NESTING} levels; 30,000 levels is a 400, not a 500`, async (t) => {
  // 30,000 arrays: under the 64 KiB body limit, deep enough to overflow a recursive JSON.stringify.
  const deepText = `{"deep":${'['.repeat(30_000)}${']'.repeat(30_000)}}`;
  const evaluateText = JSON.stringify({ ...base(), requestData: '@' }).replace('"@"', deepText);
  assertRefused(t, await evaluate(t, evaluateText), 'requestData.deep', { prefix: true, message: /deeper than 8/ });
  const ingestText = JSON.stringify(ingestRecord({ requestSummary: '@' as never })).replace('"@"', deepText);
  assertRefused(t, await ingest(t, ingestText), 'requestSummary.deep', { prefix: true, message: /deeper than 8/ });

  const atBound = with_((b) => (b.requestData = { deep: nested(MAX_NESTING) }));
  t.is((await evaluate(t, atBound)).status, 200);
  assertBothPaths(t, atBound, true);
  const over = with_((b) => (b.requestData = { deep: nested(MAX_NESTING + 1) }));
  assertRefused(t, await evaluate(t, over), `requestData.deep${'[0]'.repeat(MAX_NESTING)}`);
  assertBothPaths(t, over, false);
  t.is((await ingest(t, ingestRecord({ requestSummary: { deep: nested(MAX_NESTING) } as never }))).status, 201);
});

// 4. Timestamps

test('recentHumanSignalAt needs an offset, a real date, and no more than the allowed clock skew into the future', async (t) => {
  const signal = (at: string) => with_((b) => (b.session = { ...b.session, recentHumanSignalAt: at }));
  const refused = [
    '2025-06-01T12:00:00', // no offset: the server's time zone would decide
    '2025-02-30T12:00:00Z', // Date.parse rolls it over to March 2
    '2025-04-31T00:00:00+02:00',
    '2025-06-01T24:00:00Z',
    new Date(Date.now() + 60 * 60_000).toISOString(), // an hour ahead: "just now" forever
    '2999-01-01T00:00:00Z',
    '0000-01-01T00:00:00+01:00', // an hour before year 0000 in UTC: its own ISO form would be -000001-…
  ];
  for (const at of refused) {
    const body = signal(at);
    assertRefused(t, await evaluate(t, body), 'session.recentHumanSignalAt');
    assertBothPaths(t, body, false);
  }
  const accepted = ['2024-02-29T12:00:00Z', '2025-06-01T12:00:00.123456+02:00', '2025-06-01T12:00:00-0530', new Date(Date.now() + MAX_CLOCK_SKEW_MS / 5).toISOString()];
  for (const at of accepted) {
    const body = signal(at);
    t.is((await evaluate(t, body)).status, 200, at);
    assertBothPaths(t, body, true);
  }
});

// 4b. One schema for every path

test('a passed challengeResult without its type is refused alike: over HTTP, on both validation paths, and by tps explain', async (t) => {
  const untyped = with_((b) => (b.challengeResult = { passed: true }));
  assertRefused(t, await evaluate(t, untyped), 'challengeResult.type', { message: /required when challengeResult\.passed is true/ });
  assertBothPaths(t, untyped, false);
  assertBothPaths(t, with_((b) => (b.challengeResult = { passed: false })), true);
  assertBothPaths(t, with_((b) => (b.challengeResult = { type: 'passkey', passed: true })), true);

  // `tps explain` (bin/tps.js, a process of its own) validates with the same schema.
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.write('untyped.json', JSON.stringify(untyped));
  const explained = await runScript('bin/tps.js', { LOG_LEVEL: 'silent' }, ['explain', '--request', cfg.path('untyped.json'), cfg.dir]);
  t.is(explained.code, 2, explained.stdout);
  t.regex(explained.stderr, /challengeResult\.type: challengeResult\.type is required when challengeResult\.passed is true/);
});

test('the Decision Log refuses impossible dates in from and to', async (t) => {
  const { url, secretKey } = t.context.tps;
  assertRefused(t, await get(`${url}/api/events?from=2025-02-30`, secretKey), 'from');
  assertRefused(t, await get(`${url}/api/events?to=2025-04-31T00:00:00Z`, secretKey), 'to');
  assertRefused(t, await get(`${url}/api/events?from=2025-03-01T25:00:00Z`, secretKey), 'from');
  t.is((await get(`${url}/api/events?from=2024-02-29&to=2024-03-01T00:00:00%2B01:00`, secretKey)).status, 200);
});

test('a fixture step\'s `at` needs an offset; a recentHumanSignalAt is judged against that clock', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  const fixture = (at: string, signal: string) => `
operation: customer.create
cases:
  - name: clocked
    at: '${at}'
    request:
      actor: { id: u-1, authenticated: true }
      resource: { type: customer, id: c-1 }
      session: { continuityStrength: 0.9, recentHumanSignalAt: '${signal}' }
    expect: { decision: allow }
`;
  const fixtureFile = 'rules/standard.fixtures.yaml'; // customer.create's policy
  cfg.write(fixtureFile, fixture('2025-01-08T12:00:00', '2025-01-08T11:59:00Z'));
  const offsetless = await runFixtures(cfg.dir);
  t.deepEqual(
    offsetless.problems.map((p) => p.path),
    ['cases[0].at'],
  );
  cfg.write(fixtureFile, fixture('2031-01-08T12:00:00Z', '2031-01-08T11:59:00Z'));
  const future = await runFixtures(cfg.dir);
  t.deepEqual(future.problems, []);
  t.is(future.results.length, 1);
});

// 5. Non-finite numbers

test('numbers that overflow to Infinity (1e400) are refused, naming the field', async (t) => {
  const INF = '"@inf"';
  const cases: [string, (b: Record<string, any>) => void][] = [
    ['actor.sessionAgeMinutes', (b) => (b.actor.sessionAgeMinutes = '@inf')],
    ['session.recentHumanSignalAgeSeconds', (b) => (b.session.recentHumanSignalAgeSeconds = '@inf')],
    ['requestData.amount', (b) => (b.requestData = { amount: '@inf' })],
    ['requestData.custom', (b) => (b.requestData = { custom: '@inf' })],
    ['requestData.nested.total', (b) => (b.requestData = { nested: { total: '@inf' } })],
  ];
  for (const [path, edit] of cases) {
    const text = JSON.stringify(with_(edit));
    assertRefused(t, await evaluate(t, text.replace(INF, '1e400')), path, { message: /finite/ });
    assertRefused(t, await evaluate(t, text.replace(INF, '-1e400')), path);
    const parsed = JSON.parse(text.replace(INF, '1e400'));
    assertBothPaths(t, parsed, false);
  }
  const summary = JSON.stringify(ingestRecord({ requestSummary: { total: '@inf' } as never })).replace(INF, '1e400');
  assertRefused(t, await ingest(t, summary), 'requestSummary.total', { message: /finite/ });
});

// 6. A POST that carries no body at all

test('a JSON POST with neither content-length nor transfer-encoding is 400 invalid_request, not 415', async (t) => {
  // What `curl -X POST -H 'content-type: application/json'` sends without -d.
  const evaluated = await rawRequest(t.context.tps.url, postHead(t, '/api/evaluate', 'content-type: application/json'));
  t.is(evaluated.status, 400, JSON.stringify(evaluated.body));
  t.is(evaluated.body?.error?.code, 'invalid_request');
  t.deepEqual(evaluated.body.error.details.map((d: { path: string }) => d.path), ['operationKey', 'actor', 'resource']);
  const ingested = await rawRequest(t.context.tps.url, postHead(t, '/api/events/ingest', 'content-type: application/json; charset=utf-8'));
  assertRefused(t, ingested, 'telemetryId');
  // Without a JSON content-type it stays 415.
  t.is((await rawRequest(t.context.tps.url, postHead(t, '/api/evaluate', 'content-type: text/plain'))).status, 415);
  t.is((await rawRequest(t.context.tps.url, postHead(t, '/api/evaluate'))).status, 415);
});
