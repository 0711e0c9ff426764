// Over real HTTP: a 400 lists every offending path inside free-form JSON (evaluate's requestData, an
// ingested requestSummary), up to a bound, and ingest refuses telemetryIds no GET could reach.
import anyTest, { type TestFn } from 'ava';
import { get, post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord } from '../events/helpers.js';

const test = anyTest as TestFn<{ tps: RunningTps }>;

/** README: inside requestData or a requestSummary, the first 20 problems are listed. */
const MAX_FREE_FORM_PROBLEMS = 20;

test.before(async (t) => {
  t.context.tps = await startTps();
});
test.after.always(async (t) => t.context.tps?.close());

const paths = (res: { body: any }): string[] => (res.body?.error?.details ?? []).map((d: { path: string }) => d.path);

const evaluate = (tps: RunningTps, requestData: unknown) =>
  post(`${tps.url}/api/evaluate`, { operationKey: 'customer.create', actor: { id: 'u-1' }, resource: { type: 'customer', id: 'c-1' }, requestData }, tps.secretKey);
const ingest = (tps: RunningTps, body: unknown) => post(`${tps.url}/api/events/ingest`, body, tps.secretKey);

test('evaluate names every bad string in requestData, not the first', async (t) => {
  const res = await evaluate(t.context.tps, { a: 'x\u0000', b: 'y\u0000' });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid_request');
  t.deepEqual(paths(res), ['requestData.a', 'requestData.b']);
});

test('problems of every kind and depth are listed, outer ones first', async (t) => {
  const res = await evaluate(t.context.tps, { deep: { s: 'z\u0000' }, n: 'ok', a: 'x\u0000', list: ['fine', '\ud800'] });
  t.is(res.status, 400);
  t.deepEqual(paths(res), ['requestData.a', 'requestData.deep.s', 'requestData.list[1]']);
});

test(`the list stops at ${MAX_FREE_FORM_PROBLEMS} problems`, async (t) => {
  const requestData = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, '\u0000']));
  const res = await evaluate(t.context.tps, requestData);
  t.is(res.status, 400);
  t.deepEqual(paths(res), Array.from({ length: MAX_FREE_FORM_PROBLEMS }, (_, i) => `requestData.k${i}`));
});

test('ingest names every bad string in requestSummary', async (t) => {
  const res = await ingest(t.context.tps, ingestRecord({ requestSummary: { a: 'x\u0000', b: 'y\u0000' } }));
  t.is(res.status, 400);
  t.deepEqual(paths(res), ['requestSummary.a', 'requestSummary.b']);
});

test('ingest refuses a telemetryId of dots only, which GET /api/events/{telemetryId} could never reach', async (t) => {
  const { tps } = t.context;
  for (const telemetryId of ['.', '..', '...']) {
    const res = await ingest(tps, ingestRecord({ telemetryId }));
    t.is(res.status, 400, telemetryId);
    t.deepEqual(res.body.error.details, [{ path: 'telemetryId', message: 'telemetryId must be 1 to 128 letters, digits or . _ : -, and not only dots' }]);
  }
  // Dots beside anything else are fine, and reachable.
  for (const telemetryId of ['.a', 'a..', '..:']) {
    t.is((await ingest(tps, ingestRecord({ telemetryId }))).status, 201, telemetryId);
    const stored = await get(`${tps.url}/api/events/${telemetryId}`, tps.secretKey);
    t.is(stored.status, 200, telemetryId);
    t.is(stored.body.telemetryId, telemetryId);
  }
});
