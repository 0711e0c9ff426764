import type { ExecutionContext } from 'ava';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { RunningTps } from '../helpers/tps.js';

// The published /openapi.json as a JSON Schema validator, and the checks of a real answer against it.

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

export type Answer = { status: number; headers: Headers; json?: any };

/** One request over HTTP; a stream that opened is left at its headers. */
export async function call(url: string, method: 'GET' | 'POST', path: string, key?: string, body?: unknown): Promise<Answer> {
  const abort = new AbortController();
  const res = await fetch(`${url}${path}`, {
    method,
    signal: abort.signal,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
    abort.abort();
    return { status: res.status, headers: res.headers };
  }
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined };
}

export interface PublishedDoc {
  doc: any;
  /** A validator for the schema at `pointer` (a JSON pointer into the document, "#/…"). */
  schema(pointer: string): ValidateFunction;
  /** A validator for a schema object that may $ref the document's components. */
  compile(schema: object): ValidateFunction;
}

const ID = 'tps:openapi';
const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');
export const pointer = (...segments: (string | number)[]) => `#/${segments.map((s) => escape(String(s))).join('/')}`;

/** The document a running TPS serves, loaded into Ajv (JSON Schema 2020-12, OpenAPI 3.1's dialect). */
export async function publishedDoc(tps: RunningTps): Promise<PublishedDoc> {
  const doc = (await call(tps.url, 'GET', '/openapi.json')).json;
  // strict: false, as the document holds OpenAPI's own keys beside the schemas.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  // The document's own refs are "#/components/…": its $id makes them resolve against it.
  ajv.addSchema({ ...doc, $id: ID });
  const cache = new Map<string, ValidateFunction>();
  return {
    doc,
    schema(at) {
      let v = cache.get(at);
      if (!v) cache.set(at, (v = ajv.compile({ $ref: `${ID}${at}` })));
      return v;
    },
    compile: (schema) => ajv.compile({ ...rebase(schema) }),
  };
}

// A schema taken out of the document refers to "#/components/…", which means the document.
function rebase(value: any): any {
  if (Array.isArray(value)) return value.map(rebase);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `${ID}${v}` : rebase(v)]));
}

const resolve = (doc: any, item: any) => (item?.$ref ? item.$ref.slice(2).split('/').reduce((o: any, k: string) => o?.[k], doc) : item);

/** The headers whose presence the document must declare when an answer carries them. */
const CHECKED_HEADERS = ['retry-after', 'x-request-id', 'www-authenticate'];

/**
 * That the document lists this answer for the operation, its body passes the documented schema,
 * each of CHECKED_HEADERS it carries is documented (with a value the header's schema takes), and
 * each header documented as required is there.
 */
export function checkAnswer(t: ExecutionContext, published: PublishedDoc, method: 'get' | 'post', route: string, answer: Answer): void {
  const what = `${method.toUpperCase()} ${route} ${answer.status}${answer.json?.error ? ` ${answer.json.error.code}` : ''}`;
  const documented = published.doc.paths[route]?.[method]?.responses?.[answer.status];
  if (!documented) return void t.fail(`${what}: /openapi.json does not list this answer`);
  if (answer.json !== undefined) {
    const at = pointer('paths', route, method, 'responses', answer.status, 'content', 'application/json', 'schema');
    if (!documented.content?.['application/json']?.schema) return void t.fail(`${what}: JSON with no schema documented`);
    const valid = published.schema(at);
    t.true(valid(answer.json), `${what}: ${JSON.stringify(valid.errors)} for ${JSON.stringify(answer.json).slice(0, 300)}`);
  }
  const headers = documented.headers ?? {};
  for (const name of CHECKED_HEADERS) {
    const value = answer.headers.get(name);
    if (value === null) continue;
    const declared = resolve(published.doc, headers[name]);
    if (!declared) {
      t.fail(`${what} carries ${name}, which /openapi.json does not declare`);
      continue;
    }
    const typed = declared.schema?.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
    t.true(published.compile(declared.schema)(typed), `${what}: ${name}: ${value} breaks its documented schema`);
  }
  for (const [name, item] of Object.entries(headers)) {
    if (resolve(published.doc, item)?.required) t.not(answer.headers.get(name), null, `${what} lacks ${name}, documented as always sent`);
  }
}
