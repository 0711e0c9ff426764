import test from 'ava';
import { startTps, type RunningTps } from '../helpers/tps.js';

// GET /openapi.json against the running service: every answer a route gives, provoked over real
// HTTP, is documented for that route, an error with the Error schema and a JSON answer with a schema.

type Answer = { status: number; json?: any };

async function call(tps: RunningTps, method: 'GET' | 'POST', path: string, key?: string, body?: unknown): Promise<Answer> {
  const abort = new AbortController();
  const res = await fetch(`${tps.url}${path}`, {
    method,
    signal: abort.signal,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // A stream that opened never ends: its status is all this needs.
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    abort.abort();
    return { status: res.status };
  }
  const text = await res.text();
  return { status: res.status, json: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

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

test('every status a route answers is in /openapi.json for that route, errors with the Error schema', async (t) => {
  const tps = await startTps();
  // A quota of 3 a minute: the 429 of every keyed route.
  const limited = await startTps({ env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '3' } });
  t.teardown(async () => {
    await tps.close();
    await limited.close();
  });
  const doc = (await call(tps, 'GET', '/openapi.json')).json;
  const key = tps.secretKey;
  const seen: [method: 'get' | 'post', route: string, answer: Answer][] = [];
  const observe = async (method: 'GET' | 'POST', route: string, path: string, keyOf?: string, body?: unknown, on = tps) => {
    const answer = await call(on, method, path, keyOf, body);
    seen.push([method.toLowerCase() as 'get' | 'post', route, answer]);
    return answer;
  };

  const evaluate = { operationKey: 'customer.create', actor: { id: 'u-1' }, resource: { type: 'customer', id: 'c-1' } };
  const evaluated = await observe('POST', '/api/evaluate', '/api/evaluate', key, evaluate);
  t.is(evaluated.status, 200);
  await observe('POST', '/api/evaluate', '/api/evaluate', key, { ...evaluate, operationKey: 'no.such' });
  await observe('POST', '/api/evaluate', '/api/evaluate', key, { actor: {} });
  await observe('POST', '/api/evaluate', '/api/evaluate', tps.publishableKey, evaluate);
  await observe('POST', '/api/evaluate', '/api/evaluate', undefined, evaluate);

  const ingested = await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1'));
  t.is(ingested.status, 201);
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1'));
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, ingestRecord('tid-1', 20));
  await observe('POST', '/api/events/ingest', '/api/events/ingest', key, { telemetryId: 'tid-2' });
  await observe('POST', '/api/events/ingest', '/api/events/ingest', tps.publishableKey, ingestRecord('tid-3'));

  await observe('GET', '/api/events', '/api/events', key);
  await observe('GET', '/api/events', '/api/events?decison=deny', key);
  await observe('GET', '/api/events', '/api/events', tps.publishableKey);
  await observe('GET', '/api/events/stream', '/api/events/stream', key);
  await observe('GET', '/api/events/stream', '/api/events/stream?limit=5', key);
  await observe('GET', '/api/events/stream', '/api/events/stream', tps.publishableKey);
  const event = '/api/events/{telemetryId}';
  t.is((await observe('GET', event, `/api/events/${evaluated.json.telemetryId}`, key)).status, 200);
  await observe('GET', event, '/api/events/tid-none', key);
  await observe('GET', event, `/api/events/${encodeURIComponent('not an id!')}`, key);
  await observe('GET', event, '/api/events/tid-1', tps.publishableKey);
  await observe('GET', event, '/api/events/tid-1');

  for (const route of ['/healthz', '/readyz', '/metrics', '/openapi.json']) await observe('GET', route, route);

  // Each keyed route past the quota (asked again until refused: the quota's minute may turn over).
  const keyed: ['GET' | 'POST', string, string, unknown?][] = [
    ['POST', '/api/evaluate', '/api/evaluate', evaluate],
    ['POST', '/api/events/ingest', '/api/events/ingest', ingestRecord('tid-q')],
    ['GET', '/api/events', '/api/events'],
    ['GET', '/api/events/stream', '/api/events/stream'],
    ['GET', event, '/api/events/tid-q'],
  ];
  for (const [method, route, path, body] of keyed) {
    let status = 0;
    for (let i = 0; i < 20 && status !== 429; i++) status = (await observe(method, route, path, limited.secretKey, body, limited)).status;
    t.is(status, 429, `${method} ${route}`);
  }

  const statuses = new Set(seen.map(([, , a]) => a.status));
  for (const s of [200, 201, 400, 401, 403, 404, 409, 422, 429]) t.true(statuses.has(s), `no ${s} was provoked`);
  for (const [method, route, answer] of seen) {
    const documented = doc.paths[route]?.[method]?.responses?.[answer.status];
    t.truthy(documented, `${method.toUpperCase()} ${route} answers ${answer.status}, which /openapi.json does not list`);
    if (!documented || answer.json === undefined) continue;
    const schema = documented.content?.['application/json']?.schema;
    t.truthy(schema, `${method.toUpperCase()} ${route} ${answer.status} answers JSON with no schema documented`);
    if (answer.status >= 400) {
      t.deepEqual(schema, { $ref: '#/components/schemas/Error' });
      t.true(doc.components.schemas.Error.properties.error.properties.code.enum.includes(answer.json.error.code));
    }
  }
});
