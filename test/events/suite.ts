import type { TestFn } from 'ava';
import type { DecisionEvent, IngestRecord } from '../../src/api/types.js';
import { Ingestor } from '../../src/events/ingest.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { reasonKeys } from '../../src/store/reasonIndex.js';
import { samples } from '../core/evaluate-suite.js';
import { get, post, startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';
import { generateEvents, GENERATED_SPACING_MS, ingestRecord, newEnvironment, query, storePages, uid, walk } from './helpers.js';

// Ingest, Decision Logs, explanation, isolation and retention over real HTTP, registered once per
// store so SQLite and PostgreSQL run the very same assertions. Each test works in an environment of
// its own, so the tests of one file can share a server and run concurrently.

type Ctx = { tps: RunningTps };
const DAY = 86_400_000;

export function registerEventsSuite(test: TestFn<Ctx>, store: StoreKind): void {
  test.before(async (t) => {
    t.context.tps = await startTps({ store, env: { TPS_EVENT_RETENTION_DAYS: '30' } });
  });
  test.after.always(async (t) => {
    await t.context.tps?.close();
  });

  const ingest = (t: { context: Ctx }, body: unknown, key: string) => post(`${t.context.tps.url}/api/events/ingest`, body, key);

  // ---------------------------------------------------------------- ingest

  test(`[${store}] ingest stores a valid record as source "ingest" with its normalized signals`, async (t) => {
    const { secretKey, environment } = await newEnvironment(t.context.tps);
    const record = ingestRecord();
    const res = await ingest(t, record, secretKey);
    t.is(res.status, 201);
    t.deepEqual(res.body, { telemetryId: record.telemetryId, stored: true });
    const back = await get(`${t.context.tps.url}/api/events/${record.telemetryId}`, secretKey);
    t.is(back.status, 200);
    t.like(back.body, {
      telemetryId: record.telemetryId,
      environment,
      source: 'ingest',
      operationKey: record.operationKey,
      actorId: record.actorId,
      resourceType: record.resourceType,
      resourceId: record.resourceId,
      decision: record.decision,
      score: record.score,
      riskBand: null,
      policyId: null,
      policyVersionId: null,
      policyVersion: null,
    });
    t.deepEqual(back.body.reasons, record.reasons);
    t.deepEqual(back.body.requestSummary, record.requestSummary);
    t.deepEqual(back.body.explanation.normalizedSignals, record.normalizedSignals);
    t.false(Number.isNaN(Date.parse(back.body.createdAt)));
  });

  const invalid: [string, (r: IngestRecord) => unknown, string[]][] = [
    ['a required field is missing', ({ actorId: _, ...r }) => r, ['actorId']],
    ['every required field is missing', () => ({}), ['operationKey', 'actorId', 'resourceType', 'resourceId', 'telemetryId', 'requestSummary', 'decision', 'score', 'reasons', 'normalizedSignals']],
    ['decision is not one of the five', (r) => ({ ...r, decision: 'block' }), ['decision']],
    ['score is above 100', (r) => ({ ...r, score: 100.5 }), ['score']],
    ['score is negative', (r) => ({ ...r, score: -1 }), ['score']],
    ['score is a string', (r) => ({ ...r, score: '50' }), ['score']],
    ['a normalized signal is above 1', (r) => ({ ...r, normalizedSignals: { ok: 0.5, hot: 1.01 } }), ['normalizedSignals.hot']],
    ['a normalized signal is below 0', (r) => ({ ...r, normalizedSignals: { cold: -0.1 } }), ['normalizedSignals.cold']],
    ['a normalized signal is not a number', (r) => ({ ...r, normalizedSignals: { flag: true } }), ['normalizedSignals.flag']],
    ['normalizedSignals is an array', (r) => ({ ...r, normalizedSignals: [0.5] }), ['normalizedSignals']],
    ['reasons is not an array', (r) => ({ ...r, reasons: 'deny' }), ['reasons']],
    ['a reason is not a string', (r) => ({ ...r, reasons: ['ok', 7] }), ['reasons[1]']],
    ['requestSummary is not an object', (r) => ({ ...r, requestSummary: 'three rows' }), ['requestSummary']],
    ['telemetryId has characters outside the id alphabet', (r) => ({ ...r, telemetryId: 'a/b c' }), ['telemetryId']],
    ['an id is empty', (r) => ({ ...r, resourceId: '' }), ['resourceId']],
    ['an id is too long', (r) => ({ ...r, operationKey: 'x'.repeat(129) }), ['operationKey']],
    ['an unknown field is sent', (r) => ({ ...r, riskBand: 'high' }), ['riskBand']],
    ['several fields are wrong at once', (r) => ({ ...r, decision: 'maybe', score: 101, normalizedSignals: { a: 2 } }), ['decision', 'score', 'normalizedSignals.a']],
  ];
  for (const [name, mutate, paths] of invalid) {
    test(`[${store}] ingest answers 400 naming each offending path when ${name}`, async (t) => {
      const { secretKey, environment } = await newEnvironment(t.context.tps);
      const res = await ingest(t, mutate(ingestRecord()), secretKey);
      t.is(res.status, 400);
      t.is(res.body.error.code, 'invalid_request');
      const named = new Set(res.body.error.details.map((d: { path: string }) => d.path));
      t.deepEqual([...new Set(paths)].filter((p) => !named.has(p)), [], JSON.stringify(res.body.error.details));
      t.is(await t.context.tps.tps.events.count(environment), 0, 'nothing stored');
    });
  }

  test(`[${store}] ingest refuses bodies that are not JSON, and keys that may not ingest`, async (t) => {
    const { url, publishableKey } = t.context.tps;
    const { secretKey } = await newEnvironment(t.context.tps);
    t.is((await ingest(t, '{"operationKey":', secretKey)).body.error.code, 'invalid_json');
    const text = await fetch(`${url}/api/events/ingest`, { method: 'POST', headers: { authorization: `Bearer ${secretKey}`, 'content-type': 'text/plain' }, body: 'x' });
    t.is(text.status, 415);
    t.is((await ingest(t, ingestRecord(), '')).status, 401);
    t.is((await ingest(t, ingestRecord(), publishableKey)).status, 403);
  });

  test(`[${store}] an exact repeat is a 200 duplicate; the same telemetryId with other content is a 409`, async (t) => {
    const { secretKey, environment } = await newEnvironment(t.context.tps);
    const record = ingestRecord();
    t.is((await ingest(t, record, secretKey)).status, 201);
    const again = await ingest(t, record, secretKey);
    t.is(again.status, 200);
    t.deepEqual(again.body, { telemetryId: record.telemetryId, stored: false, duplicate: true });
    // Key order inside objects is not content.
    const reordered = { ...record, requestSummary: { changedFields: ['amount'], requestedCount: 3 } };
    t.is((await ingest(t, reordered, secretKey)).status, 200);
    const changes: Partial<IngestRecord>[] = [
      { score: 72.6 },
      { decision: 'allow' },
      { reasons: [...record.reasons].reverse() },
      { normalizedSignals: { bulk_or_export_volume: 0.8 } },
      { requestSummary: { requestedCount: 4, changedFields: ['amount'] } },
      { actorId: 'someone_else' },
      { operationKey: 'customer.create' },
      { resourceType: 'customer' },
      { resourceId: 'inv_2' },
    ];
    for (const change of changes) {
      const res = await ingest(t, { ...record, ...change }, secretKey);
      t.is(res.status, 409, JSON.stringify(change));
      t.is(res.body.error.code, 'telemetry_id_conflict');
    }
    t.is(await t.context.tps.tps.events.count(environment), 1);
  });

  test(`[${store}] a telemetryId made by evaluate cannot be ingested over`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const evaluated = await post(`${t.context.tps.url}/api/evaluate`, { ...samples.createCustomer(), operationKey: 'customer.create' }, secretKey);
    t.is(evaluated.status, 200);
    const res = await ingest(t, ingestRecord({ telemetryId: evaluated.body.telemetryId }), secretKey);
    t.is(res.status, 409);
  });

  test(`[${store}] concurrent ingests of one telemetryId store it exactly once`, async (t) => {
    const { secretKey, environment } = await newEnvironment(t.context.tps);
    const record = ingestRecord();
    const same = await Promise.all(Array.from({ length: 40 }, () => ingest(t, record, secretKey)));
    t.deepEqual(same.map((r) => r.status).sort(), [...Array<number>(39).fill(200), 201]);
    // Racing different contents: one wins, the identical ones are duplicates, the rest conflicts.
    const raced = ingestRecord();
    const variants = Array.from({ length: 30 }, (_, i) => ({ ...raced, score: i % 3 }));
    const results = await Promise.all(variants.map((v) => ingest(t, v, secretKey)));
    t.is(results.filter((r) => r.status === 201).length, 1);
    const stored = await get(`${t.context.tps.url}/api/events/${raced.telemetryId}`, secretKey);
    results.forEach((r, i) => {
      const expected = variants[i]!.score === stored.body.score ? [200, 201] : [409];
      t.true(expected.includes(r.status), `variant ${i} answered ${r.status}`);
    });
    t.is(await t.context.tps.tps.events.count(environment), 2);
  });

  test(`[${store}] two service instances on one store ingesting the same telemetryId store it once`, async (t) => {
    const { environment } = await newEnvironment(t.context.tps);
    const other = await openDatabase(t.context.tps.databaseUrl, { migrate: false });
    try {
      const a = new Ingestor(t.context.tps.tps.events, { maxBatch: 64, maxDelayMs: 0 });
      const b = new Ingestor(new KnexEventStore(other), { maxBatch: 64, maxDelayMs: 0 });
      const records = Array.from({ length: 20 }, () => ingestRecord());
      const outcomes = await Promise.all(records.flatMap((r) => [a.ingest(environment, r), b.ingest(environment, r), a.ingest(environment, r)]));
      for (let i = 0; i < records.length; i++) t.deepEqual(outcomes.slice(i * 3, i * 3 + 3).sort(), ['duplicate', 'duplicate', 'stored']);
      t.is(await t.context.tps.tps.events.count(environment), 20);
    } finally {
      await other.close();
    }
  });

  // ---------------------------------------------------------------- Decision Logs

  const N = 3000;
  type Filters = Record<string, string>;
  const predicate = (f: Filters) => (e: EventRecord) =>
    (f.operationKey === undefined || e.operationKey === f.operationKey) &&
    (f.actorId === undefined || e.actorId === f.actorId) &&
    (f.resourceType === undefined || e.resourceType === f.resourceType) &&
    (f.resourceId === undefined || e.resourceId === f.resourceId) &&
    (f.decision === undefined || e.decision === f.decision) &&
    (f.riskBand === undefined || e.riskBand === f.riskBand) &&
    (f.source === undefined || e.source === f.source) &&
    (f.reason === undefined || e.reasons.includes(f.reason)) &&
    (f.from === undefined || e.createdAt >= Date.parse(f.from)) &&
    (f.to === undefined || e.createdAt < Date.parse(f.to));

  /** A fresh environment holding N generated events, stored in batches like group commit would. */
  async function generated(t: { context: Ctx }) {
    const env = await newEnvironment(t.context.tps);
    const start = Date.now() - 2 * DAY;
    const records = generateEvents(env.environment, N, start);
    for (let i = 0; i < N; i += 250) await t.context.tps.tps.events.insertBatch(records.slice(i, i + 250));
    const at = (i: number) => new Date(start + i * GENERATED_SPACING_MS).toISOString();
    return { ...env, records, at };
  }

  test(`[${store}] every filter, alone and combined, returns exactly the matching events, newest first`, async (t) => {
    const { secretKey, records, at } = await generated(t);
    const { url } = t.context.tps;
    const newestFirst = [...records].reverse();
    const all = (await walk(url, secretKey, { limit: 500 })).flat();
    t.deepEqual(all.map((e) => e.telemetryId), newestFirst.map((e) => e.telemetryId), 'unfiltered: all events, newest first');

    const cases: Filters[] = [
      { operationKey: 'invoice.export' },
      { actorId: 'actor_5' },
      { resourceType: 'account' },
      { resourceId: 'res_17' },
      { decision: 'throttle' },
      { riskBand: 'medium' },
      { source: 'ingest' },
      { reason: 'privileged_write' },
      { from: at(2500) },
      { to: at(400) },
      { from: at(1000), to: at(1300) },
      { operationKey: 'customer.create', decision: 'allow', riskBand: 'low' },
      { reason: 'weak_session_continuity', source: 'evaluate', actorId: 'actor_3' },
      { resourceType: 'invoice', resourceId: 'res_2', from: at(100), to: at(2900) },
      { reason: 'bulk_or_export_volume', decision: 'deny', operationKey: 'bank_account.update', riskBand: 'high' },
    ];
    for (const f of cases) {
      const expected = newestFirst.filter(predicate(f)).map((e) => e.telemetryId);
      t.true(expected.length > 0, `case ${JSON.stringify(f)} matches something`);
      const got = (await walk(url, secretKey, { ...f, limit: 97 })).flat().map((e) => e.telemetryId);
      t.deepEqual(got, expected, JSON.stringify(f));
    }
    // A combination nothing satisfies is an empty list, not an error.
    const none = await get(`${url}/api/events?${query({ actorId: 'actor_1', reason: 'no_such_reason' })}`, secretKey);
    t.deepEqual(none.body, { events: [], nextCursor: null });
  });

  test(`[${store}] pages never skip or repeat an event, even while new events arrive`, async (t) => {
    const { secretKey, environment, records } = await generated(t);
    const { url } = t.context.tps;
    const f = { decision: 'deny' };
    const original = [...records].reverse().filter(predicate(f)).map((e) => e.telemetryId);
    const late: string[] = [];
    for (const limit of [1, 7, 50, 500]) {
      const snapshot = [...late].reverse().concat(original);
      const pages: DecisionEvent[][] = [];
      let cursor: string | undefined;
      let arrivals = 0;
      do {
        const res = await get(`${url}/api/events?${query({ ...f, limit, cursor })}`, secretKey);
        t.is(res.status, 200);
        pages.push(res.body.events);
        cursor = res.body.nextCursor ?? undefined;
        // New matching events arrive between pages (limit 1 would take too long to do it every time).
        if (pages.length % 25 === 1) {
          const fresh = ingestRecord({ decision: 'deny', telemetryId: uid('late') });
          t.is((await ingest(t, fresh, secretKey)).status, 201);
          late.push(fresh.telemetryId);
          arrivals++;
        }
      } while (cursor);
      const ids = pages.flat().map((e) => e.telemetryId);
      t.deepEqual(ids, snapshot, `limit ${limit}: the walk is exactly the events that existed when it began`);
      t.true(pages.slice(0, -1).every((p) => p.length === limit), `limit ${limit}: every page but the last is full`);
      t.true(pages[pages.length - 1]!.length >= 1 && pages[pages.length - 1]!.length <= limit);
      t.true(arrivals > 0);
    }
    // The default page is 50 and the newest page now starts with the late arrivals.
    const first = await get(`${url}/api/events?decision=deny`, secretKey);
    t.is(first.body.events.length, 50);
    t.regex(first.body.events[0].telemetryId, /^late_/);
    t.true((await t.context.tps.tps.events.count(environment)) > N);
  });

  test(`[${store}] multi-filter pages return the same events whichever plan reads them, in both directions`, async (t) => {
    const { environment, records, at } = await generated(t);
    // A window of a few dozen seqs makes nearly every PostgreSQL multi-filter page take its second plan.
    const events = new KnexEventStore(t.context.tps.tps.db, { probeWindow: 37 });
    const cases: Filters[] = [
      { operationKey: 'customer.create', decision: 'allow' },
      { reason: 'weak_session_continuity', actorId: 'actor_3' },
      { reason: 'privileged_write' },
      { resourceType: 'invoice', riskBand: 'high', source: 'ingest', from: at(200), to: at(2800) },
      { actorId: 'actor_1', reason: 'no_such_reason' },
    ];
    const filterOf = (f: Filters) => ({ ...f, fromMs: f.from ? Date.parse(f.from) : undefined, toMs: f.to ? Date.parse(f.to) : undefined, from: undefined, to: undefined });
    /** Every page of the filter in one direction, 13 at a time. */
    const pages = (f: Filters, order: 'asc' | 'desc') => storePages(events, environment, filterOf(f) as never, order, 13);
    for (const f of cases) {
      const expected = records.filter(predicate(f)).map((e) => e.telemetryId);
      t.deepEqual(await pages(f, 'desc'), [...expected].reverse(), `desc ${JSON.stringify(f)}`);
      const up = await pages(f, 'asc');
      t.deepEqual(up, expected, `asc ${JSON.stringify(f)}`);
    }
  });

  test(`[${store}] time ranges stay exact when history is stored after newer events`, async (t) => {
    const { environment, secretKey } = await newEnvironment(t.context.tps);
    const now = Date.now();
    // Live events first, then an import of older history, then a batch that mixes times.
    const live = generateEvents(environment, 300, now - 3_600_000).map((e) => ({ ...e, telemetryId: `live_${e.telemetryId}` }));
    const history = generateEvents(environment, 300, now - 5 * DAY).map((e) => ({ ...e, telemetryId: `old_${e.telemetryId}` }));
    const mixed = generateEvents(environment, 200, now - 3 * DAY)
      .map((e, i) => ({ ...e, telemetryId: `mix_${e.telemetryId}`, createdAt: i % 2 ? e.createdAt : now - 7_200_000 + i * 1000 }))
      .reverse();
    for (const batch of [live, history, mixed]) await t.context.tps.tps.events.insertBatch(batch);
    const all = [...live, ...history, ...mixed];
    const iso = (ms: number) => new Date(ms).toISOString();
    const windows: Filters[] = [
      { from: iso(now - 4 * DAY) },
      { to: iso(now - 4 * DAY) },
      { from: iso(now - 3 * DAY), to: iso(now - 2 * DAY) },
      { from: iso(now - 7_200_000), to: iso(now - 3_000_000) },
      { to: iso(now - 30 * DAY) },
      { from: iso(now + DAY) },
      { from: iso(now - 5 * DAY + 150_000), to: iso(now - 5 * DAY + 151_000) },
      { from: iso(now - 4 * DAY), decision: 'deny', source: 'evaluate' },
    ];
    const order = (await walk(t.context.tps.url, secretKey, { limit: 500 })).flat().map((e) => e.telemetryId);
    const byId = new Map(all.map((e) => [e.telemetryId, e]));
    for (const f of windows) {
      const expected = order.filter((id) => predicate(f)(byId.get(id)!));
      const got = (await walk(t.context.tps.url, secretKey, { ...f, limit: 41 })).flat().map((e) => e.telemetryId);
      t.deepEqual(got, expected, JSON.stringify(f));
    }
  });

  const badQueries: [string, string][] = [
    ['decision=maybe', 'decision'],
    ['riskBand=extreme', 'riskBand'],
    ['source=import', 'source'],
    ['reason=not%20a%20code', 'reason'],
    ['operationKey=', 'operationKey'],
    ['from=yesterday', 'from'],
    ['to=2024-13-45T00:00:00Z', 'to'],
    ['from=2024-05-01T10:00:00', 'from'],
    ['from=2024-05-02&to=2024-05-01', 'to'],
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=ten', 'limit'],
    ['cursor=not-a-cursor', 'cursor'],
    ['decison=deny', 'decison'],
    ['decision=deny&decision=allow', 'decision'],
  ];
  for (const [q, param] of badQueries) {
    test(`[${store}] GET /api/events?${q} is a 400 naming ${param}`, async (t) => {
      const res = await get(`${t.context.tps.url}/api/events?${q}`, t.context.tps.secretKey);
      t.is(res.status, 400);
      t.is(res.body.error.code, 'invalid_request');
      t.true(res.body.error.details.some((d: { path: string }) => d.path === param), JSON.stringify(res.body.error.details));
    });
  }

  test(`[${store}] the Decision Logs need the secret key`, async (t) => {
    const { url, publishableKey } = t.context.tps;
    t.is((await get(`${url}/api/events`)).status, 401);
    t.is((await get(`${url}/api/events`, publishableKey)).status, 403);
    t.is((await get(`${url}/api/events/anything`)).status, 401);
    t.is((await get(`${url}/api/events/stream`)).status, 401);
  });

  // ---------------------------------------------------------------- explanation

  test(`[${store}] an evaluated event explains its score: contributions add up, rules, policy version`, async (t) => {
    const { secretKey } = await newEnvironment(t.context.tps);
    const { url } = t.context.tps;
    const evaluated = await post(`${url}/api/evaluate`, samples.bulkExport(), secretKey);
    t.is(evaluated.status, 200);
    const res = await get(`${url}/api/events/${evaluated.body.telemetryId}`, secretKey);
    t.is(res.status, 200);
    const e = res.body;
    t.is(e.source, 'evaluate');
    t.is(e.score, evaluated.body.score);
    t.is(e.decision, evaluated.body.decision);
    t.deepEqual(e.reasons, evaluated.body.reasons);
    const signals = e.explanation.signals as { name: string; value: number; weight: number; contribution: number }[];
    t.true(signals.length >= 2, 'several signals contributed');
    for (const s of signals) t.true(Math.abs(s.contribution - s.value * s.weight) < 1e-9, `${s.name}: contribution = value × weight`);
    const sum = signals.reduce((a, s) => a + s.contribution, 0);
    t.true(e.score < 100 && e.explanation.aiAssessment?.status !== 'applied', 'the sample is neither capped nor moved by a model');
    t.true(Math.abs(sum - e.score) <= 0.005, `contributions ${sum} add up to the score ${e.score}`);
    t.is(e.explanation.baseScore, e.score);
    t.true(e.explanation.rules.length > 0);
    t.true(e.explanation.rules.some((r: { fired: boolean }) => r.fired), 'the rule that decided is marked fired');
    t.is(e.policyId, evaluated.body.policyId);
    t.is(e.policyVersionId, evaluated.body.policyVersionId);
    t.is(e.policyVersion.versionId, e.policyVersionId);
    t.is(e.policyVersion.policyId, e.policyId);
    t.truthy(e.policyVersion.compiled);
  });

  test(`[${store}] an unknown telemetryId is a 404`, async (t) => {
    const res = await get(`${t.context.tps.url}/api/events/${uid('missing')}`, t.context.tps.secretKey);
    t.is(res.status, 404);
    t.is(res.body.error.code, 'not_found');
  });

  // ---------------------------------------------------------------- isolation

  test(`[${store}] a key sees only its own environment: list, by id, and a shared telemetryId`, async (t) => {
    const { url } = t.context.tps;
    const a = await newEnvironment(t.context.tps);
    const b = await newEnvironment(t.context.tps);
    const onlyA = ingestRecord({ actorId: 'shared_actor' });
    const shared = uid('shared');
    t.is((await ingest(t, onlyA, a.secretKey)).status, 201);
    t.is((await ingest(t, ingestRecord({ telemetryId: shared, actorId: 'shared_actor' }), a.secretKey)).status, 201);
    t.is((await ingest(t, ingestRecord({ telemetryId: shared, actorId: 'shared_actor', score: 3 }), b.secretKey)).status, 201, 'telemetryIds are per environment');
    const evaluatedA = await post(`${url}/api/evaluate`, samples.createCustomer(), a.secretKey);

    const listA = (await walk(url, a.secretKey, { actorId: 'shared_actor' })).flat();
    const listB = (await walk(url, b.secretKey, { actorId: 'shared_actor' })).flat();
    t.deepEqual(listA.map((e) => e.telemetryId).sort(), [onlyA.telemetryId, shared].sort());
    t.deepEqual(listB.map((e) => e.telemetryId), [shared]);
    t.true([...listA, ...listB].every((e) => e.environment === (listA.includes(e) ? a.environment : b.environment)));
    t.is((await walk(url, b.secretKey, {})).flat().length, 1, 'B lists nothing of A');

    t.is((await get(`${url}/api/events/${onlyA.telemetryId}`, b.secretKey)).status, 404);
    t.is((await get(`${url}/api/events/${evaluatedA.body.telemetryId}`, b.secretKey)).status, 404);
    t.is((await get(`${url}/api/events/${shared}`, b.secretKey)).body.score, 3);
    t.is((await get(`${url}/api/events/${shared}`, a.secretKey)).body.score, 72.5);
  });

  // ---------------------------------------------------------------- retention

  test(`[${store}] TPS_EVENT_RETENTION_DAYS prunes old events in batches and keeps the rest searchable`, async (t) => {
    const { tps } = t.context;
    const { environment, secretKey } = await newEnvironment(tps);
    const now = Date.now();
    const old = generateEvents(environment, 2300, now - 40 * DAY).map((e) => ({ ...e, telemetryId: `old_${e.telemetryId}` }));
    const recent = generateEvents(environment, 60, now - DAY);
    for (let i = 0; i < old.length; i += 500) await tps.tps.events.insertBatch(old.slice(i, i + 500));
    await tps.tps.events.insertBatch(recent);

    const deleted = await tps.tps.retention.runOnce();
    t.true(deleted >= old.length, `deleted ${deleted}`);
    t.is(await tps.tps.events.count(environment), recent.length);
    const kept = (await walk(tps.url, secretKey, { limit: 500 })).flat();
    t.deepEqual(kept.map((e) => e.telemetryId).sort(), recent.map((e) => e.telemetryId).sort());
    if (store === 'sqlite') {
      // SQLite's reason table went with the events: it holds exactly the kept events' reasons.
      const keys = recent.flatMap((e) => reasonKeys(environment, e.reasons));
      const rows = await tps.tps.db.knex('event_reasons').whereIn('key', [...new Set(keys)]).count<{ n: number | string }[]>({ n: '*' });
      t.is(Number(rows[0]!.n), keys.length);
    }
    const byReason = (await walk(tps.url, secretKey, { reason: 'privileged_write' })).flat();
    t.deepEqual(byReason.map((e) => e.telemetryId).sort(), recent.filter((e) => e.reasons.includes('privileged_write')).map((e) => e.telemetryId).sort());
    t.is(await tps.tps.retention.runOnce(), 0, 'a second pass finds nothing left to prune');
  });
}
