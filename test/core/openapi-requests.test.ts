import test, { type ExecutionContext } from 'ava';
import { TELEMETRY_ID } from '../../src/validate/ingestRecord.js';
import { startTps, unique, type RunningTps } from '../helpers/tps.js';
import { call, pointer, publishedDoc, type PublishedDoc } from './openapiDoc.js';

// The request schemas of /openapi.json against the service's validators, over real HTTP: requests
// made at and just past each bound the document states (and the bounds the validators hold) are
// sent, and the document (Ajv) must accept exactly those the service does not answer 400; a 400
// must name only the part of the request that was changed.

type Json = any;
interface Probe {
  /** Where the request was changed (a dotted path, "[i]" for items), for the 400's details. */
  at: string;
  value: Json;
}

const PATTERN_BREAKERS = ['a b', 'a!', 'a\u0001', 'a\u0000', 'a\ud800', '...', 'é'];

/** A small valid value of `schema`. */
function sample(schema: Json): Json {
  if (schema.enum) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (schema.format === 'date-time' || schema.anyOf) return new Date(Date.now() - 60_000).toISOString();
  switch (type) {
    case 'string':
      return 'a'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return schema.minimum ?? 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, sample(s)]));
    default:
      return 'a';
  }
}

/** What arrives of `text` sent as UTF-8 (a URL's encoding): a lone surrogate becomes U+FFFD. */
const wellFormed = (text: string) => Buffer.from(text).toString();

const join = (at: string, key: string | number) => (typeof key === 'number' ? `${at}[${key}]` : at ? `${at}.${key}` : key);

/** Values at and past each bound `schema` states, and of the wrong type. */
function probesOf(schema: Json, at: string, base: Json): Probe[] {
  const probes: Probe[] = [];
  const add = (value: Json, where = at) => probes.push({ at: where, value });
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  add(type === 'string' ? 42 : 'a');
  if (schema.enum) add('not-one-of-them');
  if (type === 'string') {
    if (schema.minLength) add('a'.repeat(schema.minLength - 1));
    if (schema.maxLength !== undefined) {
      add('a'.repeat(schema.maxLength));
      add('a'.repeat(schema.maxLength + 1));
    }
    if (schema.pattern) for (const s of PATTERN_BREAKERS) add(s);
    if (schema.not?.enum) for (const s of schema.not.enum) add(s);
    if (schema.format === 'date-time' || schema.anyOf) {
      for (const s of ['2024-05-01', '2024-05-01T12:00:00Z', '2024-05-01T12:00:00.123+01:00', '2024-05-01T12:00:00', '2024-02-30T12:00:00Z', '2024-13-01']) add(s);
    }
  }
  if (type === 'integer' || type === 'number') {
    for (const bound of [schema.minimum, schema.maximum]) if (bound !== undefined) add(bound);
    if (schema.minimum !== undefined) add(schema.minimum - 1);
    if (schema.maximum !== undefined) add(schema.maximum + 1);
    if (type === 'integer') add((schema.minimum ?? 0) + 0.5);
  }
  if (type === 'array') {
    const item = sample(schema.items);
    if (schema.maxItems !== undefined) {
      add(Array.from({ length: schema.maxItems }, () => item));
      add(Array.from({ length: schema.maxItems + 1 }, () => item));
    }
    for (const p of probesOf(schema.items, join(at, 0), item)) add([p.value], p.at);
  }
  if (type === 'object') {
    const object = base as Record<string, Json>;
    for (const key of schema.required ?? []) {
      const { [key]: _gone, ...rest } = object;
      add(rest, join(at, key));
    }
    if (schema.additionalProperties === false) add({ ...object, zzUnknown: 1 }, join(at, 'zzUnknown'));
    if (schema.propertyNames) for (const key of [...PATTERN_BREAKERS, 'x'.repeat(64), 'x'.repeat(65), 'x'.repeat(128), 'x'.repeat(129)]) add({ ...object, [key]: sample(schema.additionalProperties ?? {}) }, join(at, key));
    if (schema.maxProperties !== undefined) {
      const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, sample(schema.additionalProperties ?? {})]));
      add(keys(schema.maxProperties));
      add(keys(schema.maxProperties + 1));
    }
    if (typeof schema.additionalProperties === 'object') {
      for (const p of probesOf(schema.additionalProperties, join(at, 'k'), sample(schema.additionalProperties))) add({ ...object, k: p.value }, p.at);
    }
    if (schema.if) {
      // The condition met, what it requires left out.
      const met = { ...object, ...Object.fromEntries(Object.entries(schema.if.properties).map(([k, s]: [string, Json]) => [k, s.const])) };
      for (const key of schema.then.required) delete met[key];
      add(met);
    }
    for (const [key, sub] of Object.entries(schema.properties ?? {})) {
      for (const p of probesOf(sub, join(at, key), object[key])) add({ ...object, [key]: p.value }, p.at);
    }
  }
  return probes;
}

const within = (at: string) => (path: string) => path === at || path.startsWith(`${at}.`) || path.startsWith(`${at}[`);

/**
 * Each probe of the schema at `schemaAt`, sent by `send` (whose answer is the service's); the
 * document's verdict must be the service's, and a 400 must name the changed part only (`named`:
 * what the service calls the schema's root; a changed root is a whole body, whatever it names).
 */
async function agree(
  t: ExecutionContext,
  published: PublishedDoc,
  schemaAt: string,
  base: Json,
  send: (value: Json) => Promise<{ status: number; json?: Json }>,
  options: { named?: string; typed?: (v: Json) => Json } = {},
) {
  const { named = '', typed = (v: Json) => v } = options;
  const schema = schemaAt.split('/').slice(1).reduce((o: Json, k) => o[k.replaceAll('~1', '/').replaceAll('~0', '~')], published.doc);
  const valid = published.schema(schemaAt);
  const probes = probesOf(schema, '', base);
  t.true(probes.length > 0);
  for (const { at, value } of probes) {
    const answer = await send(value);
    const documented = valid(typed(value));
    const what = `${schemaAt} at "${at}": ${JSON.stringify(value).slice(0, 160)} → ${answer.status} ${JSON.stringify(answer.json?.error?.details ?? '').slice(0, 300)}; document: ${documented ? 'valid' : JSON.stringify(valid.errors).slice(0, 300)}`;
    t.not(answer.status, 500, what);
    t.is(answer.status !== 400, documented, what);
    const changed = named && at ? `${named}.${at}` : named || at;
    if (answer.status === 400 && changed) {
      const paths: string[] = (answer.json.error.details ?? []).map((d: { path: string }) => d.path);
      t.true(paths.length > 0 && paths.every(within(changed)), what);
    }
  }
}

let tps: RunningTps;
let published: PublishedDoc;
test.before(async () => {
  tps = await startTps();
  published = await publishedDoc(tps);
});
test.after.always(() => tps?.close());

test('EvaluateRequest: the document accepts exactly the bodies the service takes', async (t) => {
  const base = { ...sample(published.doc.components.schemas.EvaluateRequest), operationKey: 'customer.create' };
  t.is((await call(tps.url, 'POST', '/api/evaluate', tps.secretKey, base)).status, 200, 'every field filled in is a valid request');
  await agree(t, published, pointer('components', 'schemas', 'EvaluateRequest'), base, (body) => call(tps.url, 'POST', '/api/evaluate', tps.secretKey, body));
  // What the audit found accepted by the document and refused by the service.
  const schemas = published.doc.components.schemas;
  t.is(schemas.EvaluateRequest.properties.actor.properties.id.maxLength, 256);
  t.is(schemas.EvaluateRequest.properties.session.properties.userAgent.maxLength, 1024);
});

test('IngestRecord: the document accepts exactly the records the service takes', async (t) => {
  const base = { ...sample(published.doc.components.schemas.IngestRecord), telemetryId: `t-${unique()}` };
  t.is((await call(tps.url, 'POST', '/api/events/ingest', tps.secretKey, base)).status, 201, 'every field filled in is a valid record');
  // The probes share the base's telemetryId: a valid one is then a duplicate (200) or a conflict (409), never a 400.
  await agree(t, published, pointer('components', 'schemas', 'IngestRecord'), base, (body) => call(tps.url, 'POST', '/api/events/ingest', tps.secretKey, body));
  t.is(published.doc.components.schemas.IngestRecord.properties.telemetryId.pattern, TELEMETRY_ID.source);
});

test('the Decision Logs and the stream: each query parameter the document states is taken exactly as the service takes it', async (t) => {
  for (const [route, path] of [
    ['/api/events', '/api/events'],
    ['/api/events/stream', '/api/events/stream'],
  ] as const) {
    const parameters: Json[] = published.doc.paths[route].get.parameters.filter((p: Json) => p.in === 'query');
    t.true(parameters.length >= 10);
    for (const parameter of parameters) {
      // The cursor is opaque: whether it is one this service issued is not a schema's to say.
      if (parameter.name === 'cursor') continue;
      // A URL carries UTF-8, which has no lone surrogates: one arrives as U+FFFD.
      const text = (value: Json) => wellFormed(typeof value === 'string' ? value : JSON.stringify(value));
      await agree(
        t,
        published,
        pointer('paths', route, 'get', 'parameters', published.doc.paths[route].get.parameters.indexOf(parameter), 'schema'),
        sample(parameter.schema),
        (value) => call(tps.url, 'GET', `${path}?${new URLSearchParams({ [parameter.name]: text(value) })}`, tps.secretKey),
        // A query value is text; the document's integers are read from it.
        { named: parameter.name, typed: (value) => (parameter.schema.type === 'integer' && typeof value === 'number' ? value : text(value)) },
      );
    }
  }
});

test('the path telemetryId: the document accepts exactly the ids the service looks up', async (t) => {
  const parameter = published.doc.paths['/api/events/{telemetryId}'].get.parameters.find((p: Json) => p.name === 'telemetryId');
  t.is(parameter.schema.pattern, TELEMETRY_ID.source);
  const valid = published.compile(parameter.schema);
  for (const id of [...PATTERN_BREAKERS, 'a'.repeat(128), 'a'.repeat(129), 'a:b.c_d-E9', 'a/b'].map(wellFormed)) {
    const answer = await call(tps.url, 'GET', `/api/events/${encodeURIComponent(id)}`, tps.secretKey);
    t.true([400, 404].includes(answer.status), id);
    t.is(answer.status === 404, valid(id), `${JSON.stringify(id)} → ${answer.status}`);
  }
});
