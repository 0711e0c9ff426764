// Ingest's retry policy against a real local HTTP server: the server's retry-after is obeyed, never
// cut short, and a policy given with undefined fields keeps its defaults.
import test from 'ava';
import type { IngestRecord } from '../../src/api/types.js';
import { createClient, TpsError } from '../../src/client/index.js';
import { listen, uid } from './fixtures.js';

const secretKey = 'svc_sec_test_ingest_retry';

const record = (): IngestRecord => ({
  operationKey: 'customer.create', actorId: uid('actor'), resourceType: 'customer', resourceId: uid('cust'), telemetryId: uid('ext'),
  requestSummary: { requestedCount: 1 }, decision: 'allow', score: 5, reasons: ['low_risk_operation'], normalizedSignals: {},
});

/** A server that gives each call, in turn, the answer `answers` lists for it (the last one from then on). */
async function scripted(answers: { status: number; retryAfter?: string; code?: string }[]) {
  let calls = 0;
  const server = await listen((req, res) => {
    const a = answers[Math.min(calls++, answers.length - 1)]!;
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(a.retryAfter ? { 'retry-after': a.retryAfter } : {}) };
    req.resume();
    req.on('end', () => {
      const body = a.status < 300 ? { telemetryId: 'x', stored: true } : { error: { code: a.code ?? 'rate_limited', message: `answer ${calls}` } };
      res.writeHead(a.status, headers).end(JSON.stringify(body));
    });
  });
  return { url: server.url, close: server.close, calls: () => calls };
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
