// The server client against the real TPS server: every decision, the step-up retry, typed
// errors, ingest idempotency and the Decision Logs.
import test from 'ava';
import { createClient, TpsError, type TpsClient } from '../../src/client/index.js';
import type { IngestRecord } from '../../src/api/types.js';
import { startTps } from '../helpers/tps.js';
import { transactions, uid } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let client: TpsClient;

test.before(async () => {
  tps = await startTps();
  client = createClient({ baseUrl: `${tps.url}/`, secretKey: tps.secretKey, timeoutMs: 5_000 });
});
test.after.always(async () => {
  await tps?.close();
});

test('allow: a real decision, not synthetic', async (t) => {
  const result = await client.evaluate(transactions.allow());
  t.is(result.decision, 'allow');
  t.deepEqual(result.reasons, ['low_risk_operation']);
  t.is(result.synthetic, undefined);
  t.regex(result.telemetryId, /\S/);
});

test('step_up_required, then the retry with challengeResult is allowed with the same score', async (t) => {
  const tx = transactions.stepUp();
  const first = await client.evaluate(tx);
  t.is(first.decision, 'step_up_required');
  t.truthy(first.challenge?.id);
  t.is(first.challenge?.type, 'passkey');
  const retry = await client.evaluate({ ...tx, challengeResult: { type: first.challenge!.type, passed: true, challengeId: first.challenge!.id } });
  t.is(retry.decision, 'allow');
  t.deepEqual(retry.reasons, [...first.reasons, 'challenge_satisfied']);
  t.is(retry.score, first.score);
  t.not(retry.telemetryId, first.telemetryId);
});

test('allow_redacted for a large export and for PII read by support', async (t) => {
  const exported = await client.evaluate(transactions.export());
  t.is(exported.decision, 'allow_redacted');
  t.true(exported.reasons.includes('bulk_or_export_volume'));
  t.true(Array.isArray(exported.redaction?.fields));
  const pii = await client.evaluate(transactions.readPii('support'));
  t.is(pii.decision, 'allow_redacted');
  t.true(pii.redaction!.fields.includes('customer.email'));
  t.true(['mask', 'drop'].includes(pii.redaction!.strategy));
});

test('deny without the required role', async (t) => {
  const result = await client.evaluate(transactions.readPii('sales'));
  t.is(result.decision, 'deny');
});

test('throttle carries retryAfterSeconds', async (t) => {
  const result = await client.evaluate(transactions.throttle());
  t.is(result.decision, 'throttle');
  t.is(typeof result.retryAfterSeconds, 'number');
});

test('4xx answers are typed errors with code, status, requestId and details, even when failing open', async (t) => {
  const open = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, failureMode: 'open' });
  const invalid = await t.throwsAsync(open.evaluate({ ...transactions.allow(), session: { continuityStrength: 7 } }), { instanceOf: TpsError });
  t.is(invalid!.code, 'invalid_request');
  t.is(invalid!.status, 400);
  t.regex(invalid!.requestId ?? '', /\S/);
  t.true(invalid!.details!.some((d) => d.path === 'session.continuityStrength'));
  t.false(invalid!.unavailable);

  const unknown = await t.throwsAsync(open.evaluate({ ...transactions.allow(), operationKey: 'no.such_operation' }), { instanceOf: TpsError });
  t.like(unknown, { code: 'unknown_operation', status: 422 });

  const badKey = createClient({ baseUrl: tps.url, secretKey: 'svc_sec_not_a_real_key', failureMode: 'open' });
  const unauthorized = await t.throwsAsync(badKey.evaluate(transactions.allow()), { instanceOf: TpsError });
  t.like(unauthorized, { code: 'invalid_api_key', status: 401 });
});

function record(): IngestRecord {
  return {
    operationKey: 'customer.create',
    actorId: uid('actor'),
    resourceType: 'customer',
    resourceId: uid('cust'),
    telemetryId: uid('ext'),
    requestSummary: { requestedCount: 1 },
    decision: 'allow',
    score: 12,
    reasons: ['low_risk_operation'],
    normalizedSignals: { weak_session_continuity: 0.1 },
  };
}

test('ingest stores once; an exact repeat is a duplicate success; other content is a 409', async (t) => {
  const event = record();
  t.like(await client.ingest(event), { telemetryId: event.telemetryId, stored: true });
  t.like(await client.ingest(event), { telemetryId: event.telemetryId, stored: false, duplicate: true });
  const conflict = await t.throwsAsync(client.ingest({ ...event, score: 99 }), { instanceOf: TpsError });
  t.like(conflict, { code: 'telemetry_id_conflict', status: 409 });
});

test('events.get and events.list find an evaluation by telemetryId and filters', async (t) => {
  const tx = transactions.allow();
  const result = await client.evaluate(tx);
  const event = await client.events.get(result.telemetryId);
  t.is(event.telemetryId, result.telemetryId);
  t.is(event.decision, 'allow');
  t.is(event.source, 'evaluate');
  t.truthy(event.explanation);
  const page = await client.events.list({ actorId: tx.actor.id, operationKey: 'customer.create', decision: 'allow' });
  t.deepEqual(page.events.map((e) => e.telemetryId), [result.telemetryId]);
  const missing = await t.throwsAsync(client.events.get(uid('missing')), { instanceOf: TpsError });
  t.like(missing, { code: 'not_found', status: 404 });
});

test('events.iterate follows nextCursor across pages, newest first', async (t) => {
  const tx = transactions.allow();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await client.evaluate(tx)).telemetryId);
  const seen: string[] = [];
  for await (const event of client.events.iterate({ actorId: tx.actor.id, limit: 1 })) seen.push(event.telemetryId);
  t.deepEqual(seen, ids.reverse());
});
