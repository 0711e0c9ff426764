// Ingest's retry policy against a real local HTTP server: the server's retry-after is obeyed, never
// cut short (a blank one is no retry-after at all), a policy given with undefined fields keeps its
// defaults, and the caller's abort ends the wait between attempts.
import test from 'ava';
import type { IngestRecord } from '../../src/api/types.js';
import { createClient, TpsError } from '../../src/client/index.js';
import { listen, stoppedServerUrl, uid } from './fixtures.js';

const secretKey = 'svc_sec_test_ingest_retry';

const record = (): IngestRecord => ({
  operationKey: 'customer.create', actorId: uid('actor'), resourceType: 'customer', resourceId: uid('cust'), telemetryId: uid('ext'),
  requestSummary: { requestedCount: 1 }, decision: 'allow', score: 5, reasons: ['low_risk_operation'], normalizedSignals: {},
});

/** A server that gives each call, in turn, the answer `answers` lists for it (the last one from then on). */
async function scripted(answers: { status: number; retryAfter?: string; code?: string }[]) {
  let calls = 0;
  const at: number[] = [];
  const server = await listen((req, res) => {
    at.push(Date.now());
    const a = answers[Math.min(calls++, answers.length - 1)]!;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(a.retryAfter !== undefined ? { 'retry-after': a.retryAfter } : {}) };
    req.resume();
    req.on('end', () => {
      const body = a.status < 300 ? { telemetryId: 'x', stored: true } : { error: { code: a.code ?? 'rate_limited', message: `answer ${calls}` } };
      res.writeHead(a.status, headers).end(JSON.stringify(body));
    });
  });
  return { url: server.url, close: server.close, calls: () => calls, at };
}

test('a retry-after longer than the retry cap gives up at once with the 429, rather than retry early', async (t) => {
  const server = await scripted([{ status: 429, retryAfter: '45' }]);
  t.teardown(server.close);
  const client = createClient({ baseUrl: server.url, secretKey });
  const error = await t.throwsAsync(client.ingest(record()), { instanceOf: TpsError });
  t.like(error, { code: 'rate_limited', status: 429, retryAfterSeconds: 45, unavailable: true });
  t.is(server.calls(), 1, 'no early retry spent the quota');
});

test('a retry-after within the cap is waited for, then the retry succeeds', async (t) => {
  const server = await scripted([{ status: 429, retryAfter: '1' }, { status: 201 }]);
  t.teardown(server.close);
  const client = createClient({ baseUrl: server.url, secretKey, retry: { maxDelayMs: 1000 } });
  t.like(await client.ingest(record()), { stored: true });
  t.is(server.calls(), 2);
});

test('retry fields given as undefined keep the defaults: 3 retries, not endless ones', async (t) => {
  // Four 503s, then a 400: the defaults give up on the fourth 503; endless retries would reach the 400.
  const server = await scripted([...Array.from({ length: 4 }, () => ({ status: 503, code: 'store_unavailable' })), { status: 400, code: 'invalid_request' }]);
  t.teardown(server.close);
  const client = createClient({ baseUrl: server.url, secretKey, retry: { retries: undefined, baseDelayMs: 1, maxDelayMs: undefined } });
  const error = await t.throwsAsync(client.ingest(record()), { instanceOf: TpsError });
  t.is(error!.code, 'store_unavailable');
  t.is(server.calls(), 4);
});

test('a blank retry-after is no retry-after: the retry backs off rather than going at once', async (t) => {
  const blank = await scripted([{ status: 503, retryAfter: '', code: 'store_unavailable' }]);
  t.teardown(blank.close);
  const error = await t.throwsAsync(createClient({ baseUrl: blank.url, secretKey, retry: { retries: 0 } }).ingest(record()), { instanceOf: TpsError });
  t.is(error!.retryAfterSeconds, undefined, 'not "come back now"');

  const server = await scripted([{ status: 503, retryAfter: '', code: 'store_unavailable' }, { status: 201 }]);
  t.teardown(server.close);
  // The backoff before the first retry is 1.5..3 s (jitter over the upper half of 3 s); a retry-after of 0 would be none.
  const client = createClient({ baseUrl: server.url, secretKey, retry: { retries: 1, baseDelayMs: 3000, maxDelayMs: 3000 } });
  t.like(await client.ingest(record()), { stored: true });
  t.is(server.calls(), 2);
  t.true(server.at[1]! - server.at[0]! >= 1_400, `retried after ${server.at[1]! - server.at[0]!} ms`);
});

test("the caller's abort ends the wait between attempts at once, with the client's aborted error", async (t) => {
  // Nothing listens: every attempt is a network_error, retried after 5..10 s.
  const down = await stoppedServerUrl(() => listen(() => undefined));
  const client = createClient({ baseUrl: down, secretKey, retry: { retries: 3, baseDelayMs: 10_000, maxDelayMs: 10_000 } });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const started = Date.now();
  const error = await t.throwsAsync(client.ingest(record(), { signal: controller.signal }), { instanceOf: TpsError });
  t.is(error!.code, 'aborted');
  t.true(Date.now() - started < 1_000, `rejected after ${Date.now() - started} ms`);
  // Already aborted: no attempt, no wait.
  await t.throwsAsync(client.ingest(record(), { signal: controller.signal }), { instanceOf: TpsError, message: /aborted/ });
});
