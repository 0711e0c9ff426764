import http from 'node:http';
import test from 'ava';
import { financePayment } from '../helpers/payments.js';
import { startBehindProxy } from '../helpers/redisProxy.js';
import { startTps, unique } from '../helpers/tps.js';
import { call, checkAnswer, publishedDoc, type Answer } from './openapiDoc.js';

// GET /openapi.json against the running service: every answer a route gives, provoked over real
// HTTP, is documented for that route, its body passes the documented schema (Ajv, JSON Schema
// 2020-12) and the headers it carries are declared.

type Method = 'GET' | 'POST';
type Seen = [method: 'get' | 'post', route: string, answer: Answer];

const ingestRecord = (telemetryId: string, score = 10) => ({
  operationKey: 'invoice.export',
  actorId: 'u-1',
  resourceType: 'invoice',
  resourceId: 'inv-1',
  telemetryId,
  requestSummary: {},
  decision: 'allow',
  score,
  reasons: [],
  normalizedSignals: {},
});
const evaluate = { operationKey: 'customer.create', actor: { id: 'u-1' }, resource: { type: 'customer', id: 'c-1' } };
const redactedRead = {
  operationKey: 'customer.read_pii',
  actor: { id: 'agent-1', authenticated: true, roles: ['support'] },
  resource: { type: 'customer', id: 'cus-1', classification: 'PII' },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  requestData: { fields: ['customer.email'] },
};
const EVENT = '/api/events/{telemetryId}';

/** A raw request, for what fetch will not send (a header block larger than Node accepts). */
function rawStatus(url: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}${path}`, { headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c)).on('end', () => resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), json: JSON.parse(text) }));
    });
    req.on('error', reject);
  });
}

// Keys an answer carries only sometimes; every other key it has must be in its schema's `required`.
const SOMETIMES = new Set(['challenge', 'redaction', 'retryAfterSeconds', 'aiAssessment', 'explanationUnreadable', 'duplicate']);
function requiredCovers(t: import('ava').ExecutionContext, schema: any, value: any, what: string) {
  for (const key of Object.keys(value)) {
    if (!SOMETIMES.has(key)) t.true(schema.required?.includes(key), `${what}: ${key} is always sent but not in required`);
    const nested = schema.properties?.[key];
    if (nested?.type === 'object' && value[key] && typeof value[key] === 'object' && nested.properties) requiredCovers(t, nested, value[key], `${what}.${key}`);
  }
}

test('every answer a route gives is in /openapi.json for that route: status, body schema and headers', async (t) => {
  const tps = await startTps();
  // A quota of 3 a minute: the 429 of every keyed route.
  const limited = await startTps({ env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '3' } });
  t.teardown(async () => {
    await tps.close();
    await limited.close();
  });
  const published = await publishedDoc(tps);
  const key = tps.secretKey;
  const seen: Seen[] = [];
  const observe = async (method: Method, route: string, path: string, keyOf?: string, body?: unknown, on = tps) => {
    const answer = await call(on.url, method, path, keyOf, body);
    seen.push([method.toLowerCase() as 'get' | 'post', route, answer]);
    return answer;
  };

  const evaluated = await observe('POST', '/api/evaluate', '/api/evaluate', key, evaluate);
  t.is(evaluated.status, 200);
  const stepUp = await observe('POST', '/api/evaluate', '/api/evaluate', key, financePayment(50_000));
  t.truthy(stepUp.json.challenge, 'a step-up answer, with its challenge');
  const redacted = await observe('POST', '/api/evaluate', '/api/evaluate', key, redactedRead);
  t.truthy(redacted.json.redaction, 'a redacted answer');
  await observe('POST', '/api/evaluate', '/api/evaluate', key, { ...evaluate, operationKey: 'no.such' });
  await observe('POST', '/api/evaluate', '/api/evaluate', key, { actor: {} });
  await observe('POST', '/api/evaluate', '/api/evaluate', key, '{"operationKey":');
  await observe('POST', '/api/evaluate', '/api/evaluate', key, { ...evaluate, pad: 'x'.repeat(70_000) });
  await observe('POST', '/api/evaluate', '/api/evaluate', tps.publishableKey, evaluate);
  await observe('POST', '/api/evaluate', '/api/evaluate', undefined, evaluate);
  await observe('POST', '/api/evaluate', '/api/evaluate', 'svc_sec_not-a-key', evaluate);
  const textPlain = await fetch(`${tps.url}/api/evaluate`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, body: 'x' });
  seen.push(['post', '/api/evaluate', { status: textPlain.status, headers: textPlain.headers, json: await textPlain.json() }]);

  const ingested = await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1'));
  t.is(ingested.status, 201);
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1'));
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1', 20));
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, { telemetryId: 'tid-2' });
  await observe('POST', '/api/events/ingest', '/api/events/ingest', tps.publishableKey, ingestRecord('tid-3'));

  const list = await observe('GET', '/api/events', '/api/events', key);
  t.true(list.json.events.length >= 4);
  await observe('GET', '/api/events', '/api/events?decison=deny', key);
  await observe('GET', '/api/events', '/api/events', tps.publishableKey);
  await observe('GET', '/api/events/stream', '/api/events/stream', key);
  await observe('GET', '/api/events/stream', '/api/events/stream?limit=5', key);
  await observe('GET', '/api/events/stream', '/api/events/stream', tps.publishableKey);
  const one = await observe('GET', EVENT, `/api/events/${evaluated.json.telemetryId}`, key);
  t.is(one.status, 200);
  const ingestedOne = await observe('GET', EVENT, '/api/events/tid-1', key);
  t.is(ingestedOne.json.policyVersion, null);
  await observe('GET', EVENT, '/api/events/tid-none', key);
  await observe('GET', EVENT, `/api/events/${encodeURIComponent('not an id!')}`, key);
  await observe('GET', EVENT, '/api/events/tid-1', tps.publishableKey);
  await observe('GET', EVENT, '/api/events/tid-1');

  for (const route of ['/healthz', '/readyz', '/metrics', '/openapi.json']) await observe('GET', route, route);
  // Node's parser refuses a header block this large before any route runs: every operation can meet it.
  seen.push(['get', '/healthz', await rawStatus(tps.url, '/healthz', { 'x-big': 'x'.repeat(20_000) })]);

  // Each keyed route past the quota (asked again until refused: the quota's minute may turn over).
  const keyed: [Method, string, string, unknown?][] = [
    ['POST', '/api/evaluate', '/api/evaluate', evaluate],
    ['POST', '/api/events/ingest', '/api/events/ingest', ingestRecord('tid-q')],
    ['GET', '/api/events', '/api/events'],
    ['GET', '/api/events/stream', '/api/events/stream'],
    ['GET', EVENT, '/api/events/tid-q'],
  ];
  for (const [method, route, path, body] of keyed) {
    let status = 0;
    for (let i = 0; i < 20 && status !== 429; i++) status = (await observe(method, route, path, limited.secretKey, body, limited)).status;
    t.is(status, 429, `${method} ${route}`);
  }

  const statuses = new Set(seen.map(([, , a]) => a.status));
  for (const s of [200, 201, 400, 401, 403, 404, 409, 413, 415, 422, 429, 431]) t.true(statuses.has(s), `no ${s} was provoked`);
  for (const [method, route, answer] of seen) checkAnswer(t, published, method, route, answer);

  // Every field an answer always carries is required in its schema (generators make the rest optional).
  const { schemas } = published.doc.components;
  for (const answer of [evaluated, stepUp, redacted]) requiredCovers(t, schemas.EvaluateResponse, answer.json, 'EvaluateResponse');
  for (const event of list.json.events) requiredCovers(t, schemas.DecisionEvent, event, 'DecisionEvent');
  for (const event of [one.json, ingestedOne.json]) {
    const { policyVersion, ...rest } = event;
    requiredCovers(t, schemas.DecisionEvent, rest, 'DecisionEvent');
    t.true(published.doc.paths[EVENT].get.responses[200].content['application/json'].schema.allOf[1].required.includes('policyVersion'));
    if (policyVersion) requiredCovers(t, published.doc.paths[EVENT].get.responses[200].content['application/json'].schema.allOf[1].properties.policyVersion, policyVersion, 'policyVersion');
  }
  requiredCovers(t, schemas.IngestResponse, ingested.json, 'IngestResponse');
});

test('with Redis gone, each keyed route answers a state_unavailable 503 that /openapi.json lists, with retry-after; /readyz reports it', async (t) => {
  // The key quota is counted in Redis, so every keyed route asks it first.
  const { tps, proxy } = await startBehindProxy(t, { env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '1000' } });
  const published = await publishedDoc(tps);
  t.is((await call(tps.url, 'GET', '/api/events', tps.secretKey)).status, 200, 'Redis answers through the proxy');
  proxy.cut();

  const routes: [Method, string, string, unknown?][] = [
    ['POST', '/api/evaluate', '/api/evaluate', evaluate],
    ['POST', '/api/events/ingest', '/api/events/ingest', ingestRecord(`tid-${unique()}`)],
    ['GET', '/api/events', '/api/events'],
    ['GET', '/api/events/stream', '/api/events/stream'],
    ['GET', EVENT, '/api/events/tid-1'],
  ];
  for (const [method, route, path, body] of routes) {
    const answer = await call(tps.url, method, path, tps.secretKey, body);
    t.is(answer.status, 503, `${method} ${route}`);
    t.is(answer.json?.error?.code, 'state_unavailable', `${method} ${route}`);
    t.truthy(answer.headers.get('retry-after'), `${method} ${route}`);
    checkAnswer(t, published, method.toLowerCase() as 'get' | 'post', route, answer);
  }
  // Reported, without taking the instance out of rotation (README, Service endpoints).
  const readyz = await call(tps.url, 'GET', '/readyz');
  t.is(readyz.status, 200);
  t.is(readyz.json.state.status, 'unreachable');
  checkAnswer(t, published, 'get', '/readyz', readyz);
});

test('every operation has an operationId of its own', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const { doc } = await publishedDoc(tps);
  const ids = Object.values(doc.paths).flatMap((item: any) => Object.values(item).map((op: any) => op.operationId));
  t.is(ids.length, 9);
  t.true(ids.every((id) => typeof id === 'string' && id.length > 0), JSON.stringify(ids));
  t.is(new Set(ids).size, ids.length, JSON.stringify(ids));
});
