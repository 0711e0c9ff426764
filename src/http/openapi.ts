import { statusOf } from '../api/errors.js';
import { AI_STATUSES, CHALLENGE_TYPES, DECISIONS, ERROR_CODES, EVENT_SOURCES, REDACTION_STRATEGIES, RISK_BANDS, type ErrorCode } from '../api/types.js';
import { ACTION_TYPES, SENSITIVITIES } from '../policy/schema.js';
import { CODE, CONTROL_OR_LONE_SURROGATE, NUL_OR_LONE_SURROGATE } from '../validate/characters.js';
import { evaluateRequestSchema, RAW_SIGNAL_NAME } from '../validate/evaluateRequest.js';
import { DEFAULT_LIMIT, listSchema, MAX_LIMIT, streamSchema } from '../validate/eventQuery.js';
import { ingestRecordSchema, MAX_NORMALIZED_SIGNALS, SUMMARY_MAX_BYTES, TELEMETRY_ID, TELEMETRY_ID_RULE } from '../validate/ingestRecord.js';
import { MAX_NESTING } from '../validate/kit.js';
import { ISO_8601, MAX_CLOCK_SKEW_MS } from '../validate/timestamp.js';
import { REQUEST_ID, REQUEST_ID_RULE } from './middleware.js';

// OpenAPI 3.1 of the public API (CONTRACT "Service endpoints"). Enumerations come from the API
// types and the policy schema, request schemas from the validators themselves, error codes from
// the service's own status table: the document cannot drift from what the service does.

type Json = Record<string, unknown>;
const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const bool = { type: 'boolean' } as const;
const strings = { type: 'array', items: str } as const;
const dateTime = { type: 'string', format: 'date-time' } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

// ---- Request schemas, read off the validators (yup's describe()), so each bound published is the
// one enforced. Each yup test the validators use has its meaning here; the openapi test fails on a
// test without one, so a new rule cannot go unpublished.

interface Described {
  type: string;
  optional?: boolean;
  oneOf?: unknown[];
  notOneOf?: unknown[];
  tests: { name?: string; params?: Record<string, unknown> }[];
  fields?: Record<string, Described>;
  innerType?: Described;
}

/** A pattern for strings holding nothing that `re` (one character class) matches. */
function noneOf(re: RegExp): string {
  const inner = /^\[([^\]]*)\]$/.exec(re.source)?.[1];
  return inner === undefined ? `^(?:(?!${re.source})[\\s\\S])*$` : `^[^${inner}]*$`;
}
function addPattern(s: Json, pattern: string): void {
  if (s.pattern === undefined) s.pattern = pattern;
  else s.allOf = [...((s.allOf as Json[] | undefined) ?? []), { pattern }];
}
const describeAs = (s: Json, text: string) => void (s.description = s.description ? `${s.description}; ${text}` : text);
const lengthOrSize = (s: Json, bound: 'min' | 'max') =>
  s.type === 'string' ? `${bound}Length` : s.type === 'array' ? `${bound}Items` : bound === 'min' ? 'minimum' : 'maximum';

/** What each yup test of src/validate states, as JSON Schema added to `s`. */
export const TEST_MEANINGS: Record<string, (s: Json, params: Record<string, unknown> | undefined) => void> = {
  required: () => undefined, // the parent's `required`
  min: (s, p) => void (s[lengthOrSize(s, 'min')] = p!.min),
  max: (s, p) => void (s[lengthOrSize(s, 'max')] = p!.max),
  integer: (s) => void (s.type = 'integer'),
  matches: (s, p) => addPattern(s, (p!.regex as RegExp).source),
  'safe-id': (s) => addPattern(s, noneOf(CONTROL_OR_LONE_SURROGATE)),
  'safe-text': (s) => addPattern(s, noneOf(NUL_OR_LONE_SURROGATE)),
  // A JSON number is finite unless it overflows (1e400), which is refused as the Infinity it reads as.
  finite: () => undefined,
  timestamp: (s) => {
    s.format = 'date-time';
    addPattern(s, ISO_8601.source);
    describeAs(s, `ISO 8601 with an offset, on a real date, at most ${MAX_CLOCK_SKEW_MS / 60_000} minutes ahead of the service's clock`);
  },
  iso8601: (s) => {
    s.anyOf = [{ format: 'date' }, { format: 'date-time' }];
    addPattern(s, ISO_8601.source);
    describeAs(s, 'ISO 8601: a date (UTC midnight) or a date-time with an offset, on a real date');
  },
  cursor: (s) => describeAs(s, 'opaque: a cursor this service issued to this environment'),
  limit: (s) => Object.assign(s, { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }),
  'known-fields': (s) => void (s.additionalProperties = false),
  'free-form': (s) =>
    describeAs(s, `any other keys are the caller's own: keys without control characters, strings without NUL, finite numbers, objects and arrays nested at most ${MAX_NESTING} deep`),
  summary: (s) =>
    describeAs(s, `at most ${SUMMARY_MAX_BYTES} bytes of JSON; keys without control characters, strings without NUL, finite numbers, objects and arrays nested at most ${MAX_NESTING} deep`),
  'type-when-passed': () => undefined, // the parent's if/then
  map: () => undefined, // MAPS
  size: () => undefined, // MAPS
};

// mapOf's key pattern and value schema sit in closures describe() cannot read: stated here from the
// validators' own constants, and held to the service's answers by the openapi test's boundary requests.
const MAPS: Record<string, Json> = {
  rawSignals: { type: 'object', propertyNames: { pattern: RAW_SIGNAL_NAME.source }, additionalProperties: { type: ['boolean', 'number'] } },
  normalizedSignals: { type: 'object', maxProperties: MAX_NORMALIZED_SIGNALS, propertyNames: { pattern: CODE.source }, additionalProperties: { type: 'number', minimum: 0, maximum: 1 } },
};
/** The field names whose validator is a map (mapOf), each with its schema in MAPS. */
export const MAP_FIELDS = Object.keys(MAPS);

/** The JSON Schema of a validator's description; `field` is its name in its parent. */
function jsonSchemaOf(d: Described, field = ''): Json {
  if (d.type === 'mixed') return structuredClone(MAPS[field] ?? {});
  const s: Json = { type: d.type };
  const values = d.oneOf?.filter((v) => v !== undefined) ?? [];
  if (values.length) s.enum = values;
  const refused = d.notOneOf?.filter((v) => v !== undefined) ?? [];
  if (refused.length) s.not = { enum: refused };
  for (const t of d.tests) TEST_MEANINGS[t.name ?? '']?.(s, t.params);
  if (d.innerType) s.items = jsonSchemaOf(d.innerType);
  const fields = Object.entries(d.fields ?? {});
  if (fields.length) {
    s.properties = Object.fromEntries(fields.map(([name, f]) => [name, jsonSchemaOf(f, name)]));
    const required = fields.filter(([, f]) => !f.optional).map(([name]) => name);
    if (required.length) s.required = required;
    // SPEC §3 rule 2 (evaluateRequest.ts): a passed challenge result names its type.
    const whenPassed = fields.find(([, f]) => f.tests.some((t) => t.name === 'type-when-passed'));
    if (whenPassed) {
      Object.assign(s, { if: { properties: { passed: { const: true } }, required: ['passed'] }, then: { required: [whenPassed[0]] } });
      describeAs(s, `${whenPassed[0]} is required when passed is true`);
    }
  }
  return s;
}

const describedBy = (schema: { describe(): unknown }) => schema.describe() as Described;

// CONTRACT "Decision Logs": the filters of the list and the stream, as their validators take them.
const QUERY_NOTES: Record<string, string> = {
  reason: 'events whose reasons include this code',
  from: 'createdAt at or after',
  to: 'createdAt before; later than from',
  cursor: 'the list continues after it (older), the stream resumes after it (newer)',
};
const queryParameters = (schema: { describe(): unknown }) =>
  Object.entries(describedBy(schema).fields!).map(([name, d]) => ({ name, in: 'query', schema: jsonSchemaOf(d, name), ...(QUERY_NOTES[name] ? { description: QUERY_NOTES[name] } : {}) }));

// ---- Error answers: each operation lists the codes it can answer; they are grouped by the status
// the service gives each (api/errors.ts), with that status's `error.code` enum and headers.

const MEANING: Record<ErrorCode, string> = {
  invalid_json: 'the body is not JSON, or not UTF-8, or not what its content-encoding says, or is cut short',
  invalid_request: 'the request breaks a bound: a field or parameter (details name each), or HTTP itself (request line, a header, content-length)',
  missing_api_key: 'no bearer key',
  invalid_api_key: 'the key is unknown or revoked',
  publishable_key_not_allowed: 'a publishable key (svc_pub_) on a server endpoint',
  not_found: 'no such event in this environment',
  telemetry_id_conflict: 'this telemetryId is stored with different content',
  payload_too_large: 'the body (or its chunk extensions) is larger than the limit',
  unsupported_media_type:
    'the body is not application/json, or names a charset other than utf-8 or us-ascii, or its content-encoding is not gzip, deflate, br or none (in any case; x-gzip is gzip)',
  unknown_operation: 'operationKey is not configured in this environment',
  rate_limited: "the key's quota is spent (TPS_KEY_RATE_LIMIT_PER_MINUTE); retry-after says when it lets one in",
  store_unavailable: 'the store cannot be read just now; nothing was changed',
  evaluation_unavailable: 'the evaluation thread is starting again',
  state_unavailable: 'the shared state (Redis) refused, was unreachable or did not answer in time; nothing was decided',
  internal_error: 'a bug; quote the x-request-id',
};
/** The codes whose answers say when to come back (the factories in api/errors.ts, the quota, the evaluation thread). */
const RETRY_AFTER = new Set<ErrorCode>(['rate_limited', 'store_unavailable', 'evaluation_unavailable', 'state_unavailable']);
const RETRY_AFTER_HEADER = { description: 'seconds to wait before asking again', schema: { type: 'integer', minimum: 0 } };

// Any request can meet these: Node's HTTP parser refusing it (middleware.ts PARSER_REFUSALS: 400,
// 408, 413, 431) and a bug (500).
const EVERY_ROUTE: ErrorCode[] = ['invalid_request', 'payload_too_large', 'internal_error'];
// What every keyed route can answer: the key's checks (a key not cached is read from the store) and
// its quota (counted in Redis when REDIS_URL is set).
const KEYED: ErrorCode[] = ['missing_api_key', 'invalid_api_key', 'publishable_key_not_allowed', 'rate_limited', 'store_unavailable', 'state_unavailable'];
const KEYED_NOTES: Partial<Record<ErrorCode, string>> = {
  state_unavailable: `${MEANING.state_unavailable} (with REDIS_URL and a key quota)`,
};

function errorResponse(status: number, codes: ErrorCode[], notes: Partial<Record<ErrorCode, string>>, why?: string) {
  const retry = codes.some((c) => RETRY_AFTER.has(c));
  return {
    description: why ?? codes.map((c) => `${c}: ${notes[c] ?? MEANING[c]}`).join('; '),
    headers: {
      'x-request-id': header('RequestId'),
      ...(retry ? { 'retry-after': codes.every((c) => RETRY_AFTER.has(c)) ? header('RetryAfter') : { ...RETRY_AFTER_HEADER, required: false } } : {}),
      ...(status === 401 ? { 'www-authenticate': header('WwwAuthenticate') } : {}),
    },
    content: { 'application/json': { schema: { allOf: [ref('Error'), { properties: { error: { properties: { code: { enum: codes } } } } }] } } },
  };
}

/** An operation's error answers, by status, from the codes it can answer (besides EVERY_ROUTE's). */
function errorResponses(codes: ErrorCode[], notes: Partial<Record<ErrorCode, string>> = {}): Record<number, object> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes, ...EVERY_ROUTE])) byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  const responses: Record<number, object> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) responses[status] = errorResponse(status, list, notes);
  responses[408] = errorResponse(408, ['invalid_request'], notes, 'invalid_request: the request did not arrive in time');
  responses[431] = errorResponse(431, ['invalid_request'], notes, 'invalid_request: the request line and headers are larger than the server accepts');
  return responses;
}

/** An answer that is not one of CONTRACT's errors; every answer carries x-request-id. */
const answer = (description: string, content?: object, headers: object = {}) => ({ description, headers: { 'x-request-id': header('RequestId'), ...headers }, ...(content ? { content } : {}) });
const json = (schema: object) => ({ 'application/json': { schema } });

const bearer = [{ secretKey: [] }];
const telemetryIdParameter = { name: 'telemetryId', in: 'path', required: true, description: `a telemetryId (${TELEMETRY_ID_RULE})`, schema: { type: 'string', pattern: TELEMETRY_ID.source } };
const eventFilters = queryParameters(streamSchema);
const decisionLogParameters = queryParameters(listSchema);

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'TPS: Transaction Protection Service',
    version: '0.1.0',
    description:
      'Evaluate protected transactions and record decision evidence. String lengths count UTF-16 code units, as JavaScript does: a character outside the Basic Multilingual Plane counts as two. Every answer carries x-request-id.',
  },
  // The service that served this document: paths are relative to it.
  servers: [{ url: '/' }],
  components: {
    securitySchemes: { secretKey: { type: 'http', scheme: 'bearer', description: 'The environment secret key, svc_sec_…' } },
    headers: {
      RequestId: {
        description: `the request's id: the caller's x-request-id when it sent one of ${REQUEST_ID_RULE}, else a new one; quote it when reporting a problem`,
        required: true,
        schema: { type: 'string', pattern: REQUEST_ID.source },
      },
      RetryAfter: { ...RETRY_AFTER_HEADER, required: true },
      WwwAuthenticate: { description: 'Bearer; with error="invalid_token" when the key is unknown or revoked', required: true, schema: str },
    },
    schemas: {
      EvaluateRequest: jsonSchemaOf(describedBy(evaluateRequestSchema)),
      EvaluateResponse: {
        type: 'object',
        required: ['decision', 'score', 'riskBand', 'reasons', 'telemetryId', 'operationKey', 'operationDisplayName', 'actionType', 'resourceType', 'sensitivity', 'policyId', 'policyVersionId', 'warnings'],
        properties: {
          decision: { enum: DECISIONS },
          score: { type: 'number', minimum: 0, maximum: 100 },
          riskBand: { enum: RISK_BANDS },
          reasons: strings,
          telemetryId: str,
          challenge: { type: 'object', required: ['type', 'id', 'expiresAt'], properties: { type: { enum: CHALLENGE_TYPES }, id: str, expiresAt: dateTime } },
          redaction: { type: 'object', required: ['fields', 'strategy'], properties: { fields: strings, strategy: { enum: REDACTION_STRATEGIES } } },
          retryAfterSeconds: { type: 'integer', description: 'throttle: when to try again' },
          policyVersionId: str,
          aiAssessment: { type: 'object', required: ['status', 'scoreDelta'], properties: { status: { enum: AI_STATUSES }, scoreDelta: num, model: str, rationale: str, labels: strings, latencyMs: num } },
          operationKey: str,
          operationDisplayName: str,
          actionType: { enum: ACTION_TYPES },
          resourceType: str,
          sensitivity: { enum: SENSITIVITIES },
          policyId: str,
          warnings: strings,
        },
      },
      IngestRecord: jsonSchemaOf(describedBy(ingestRecordSchema)),
      IngestResponse: {
        type: 'object',
        required: ['telemetryId', 'stored'],
        properties: { telemetryId: str, stored: bool, duplicate: { type: 'boolean', enum: [true] } },
      },
      Readiness: {
        type: 'object',
        required: ['status', 'store', 'state', 'evaluation', 'configuration', 'policies'],
        properties: {
          status: { enum: ['ready', 'not_ready'] },
          store: { type: 'object', required: ['status', 'dialect'], properties: { status: { enum: ['ok', 'unreachable'] }, dialect: str } },
          state: {
            type: 'object',
            required: ['status', 'backend'],
            description:
              'the shared state: Redis (with REDIS_URL), answering a PING in time, or this process. Reported, not a condition of readiness: Redis is shared, so its outage would take every instance out of rotation at once, while calls that use no Redis-backed state still answer and the others answer 503 state_unavailable with retry-after',
            properties: { status: { enum: ['ok', 'unreachable'] }, backend: { enum: ['redis', 'memory'] } },
          },
          evaluation: { type: 'object', required: ['status'], properties: { status: { enum: ['ok', 'restarting'] }, retryAfterSeconds: { type: 'integer' } } },
          configuration: {
            type: 'object',
            required: ['versionId', 'loadedAt', 'operations', 'lastReload'],
            properties: {
              versionId: str,
              loadedAt: dateTime,
              operations: { type: 'integer' },
              lastReload: {
                type: 'object',
                required: ['status'],
                properties: {
                  status: { enum: ['ok', 'rejected'] },
                  problems: { type: 'array', items: { type: 'object', required: ['file', 'path', 'message'], properties: { file: str, line: { type: 'integer' }, path: str, message: str } } },
                },
              },
            },
          },
          policies: { type: 'array', items: { type: 'object', required: ['id', 'versionId'], properties: { id: str, versionId: str } } },
          // Only when not ready: CONTRACT's error object beside the readiness fields.
          error: { type: 'object', required: ['code', 'message'], properties: { code: { enum: ['not_ready'] }, message: str } },
        },
      },
      DecisionEvent: {
        type: 'object',
        required: [
          'telemetryId',
          'environment',
          'source',
          'createdAt',
          'operationKey',
          'actorId',
          'resourceType',
          'resourceId',
          'decision',
          'score',
          'riskBand',
          'reasons',
          'policyId',
          'policyVersionId',
          'monitored',
          'requestSummary',
          'explanation',
        ],
        properties: {
          telemetryId: str,
          environment: str,
          source: { enum: EVENT_SOURCES },
          createdAt: dateTime,
          operationKey: str,
          actorId: str,
          resourceType: str,
          resourceId: str,
          decision: { enum: DECISIONS },
          score: { type: 'number', minimum: 0, maximum: 100 },
          riskBand: { enum: [...RISK_BANDS, null], description: 'null for ingested events' },
          reasons: strings,
          policyId: { type: ['string', 'null'] },
          policyVersionId: { type: ['string', 'null'] },
          monitored: bool,
          requestSummary: { type: 'object' },
          explanation: {
            type: ['object', 'null'],
            description: 'signals (name, value, weight, contribution), rules (name, fired, decision, reason), thresholds, aiAssessment, normalizedSignals (ingest)…; null when explanationUnreadable',
            properties: {
              signals: { type: 'array', items: { type: 'object', properties: { name: str, value: num, weight: num, contribution: num, reason: str } } },
              rules: { type: 'array', items: { type: 'object', properties: { name: str, fired: bool, decision: { enum: DECISIONS }, reason: str } } },
              normalizedSignals: { type: 'object', additionalProperties: num },
            },
          },
          explanationUnreadable: {
            type: 'boolean',
            enum: [true],
            description: 'present, true, when this TPS cannot decode the stored explanation (a newer version wrote it, or the row is damaged): explanation is null, the other fields are as stored',
          },
        },
      },
      Error: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: {
              code: { enum: ERROR_CODES },
              message: str,
              details: { type: 'array', items: { type: 'object', required: ['path', 'message'], properties: { path: str, message: str } } },
            },
          },
        },
      },
    },
  },
  paths: {
    '/api/evaluate': {
      post: {
        operationId: 'evaluate',
        summary: 'Evaluate one protected transaction and record the decision',
        security: bearer,
        requestBody: { required: true, description: 'No key anywhere in the body may be named __proto__.', content: json(ref('EvaluateRequest')) },
        responses: {
          200: answer('The decision (deny, throttle and step_up_required are answers, not errors)', json(ref('EvaluateResponse')), {
            'server-timing': { description: 'with TPS_SERVER_TIMING: where the time went (evaluate, commit, total)', schema: str },
          }),
          ...errorResponses(['invalid_json', 'invalid_request', ...KEYED, 'unsupported_media_type', 'unknown_operation', 'evaluation_unavailable'], {
            store_unavailable: `${MEANING.store_unavailable}; or the decision could not be committed: nothing was stored, unless details name its telemetryId, which may have landed (look it up before retrying)`,
            state_unavailable: `${MEANING.state_unavailable} (with REDIS_URL: velocity counts, challenges, the key quota). A challenge the request used is put back, also when Redis ran the use but its reply was lost or late (a silent Redis runs the put-back once it answers again); if the put-back cannot reach Redis either, the challenge may stay used and the retry is challenged again, never allowed twice`,
          }),
        },
      },
    },
    '/api/events/ingest': {
      post: {
        operationId: 'ingestEvent',
        summary: 'Record a decision the caller already made',
        security: bearer,
        requestBody: { required: true, description: 'No key anywhere in the body may be named __proto__.', content: json(ref('IngestRecord')) },
        responses: {
          201: answer('Stored', json(ref('IngestResponse'))),
          200: answer('Exact duplicate of a stored event (stored: false, duplicate: true)', json(ref('IngestResponse'))),
          ...errorResponses(['invalid_json', 'invalid_request', ...KEYED, 'telemetry_id_conflict', 'unsupported_media_type'], {
            ...KEYED_NOTES,
            store_unavailable: `${MEANING.store_unavailable}; or the event could not be recorded: nothing was stored`,
          }),
        },
      },
    },
    '/api/events': {
      get: {
        operationId: 'listEvents',
        summary: "Decision Logs: the key's environment's events, newest first, filtered and paged (an unknown parameter is a 400)",
        security: bearer,
        parameters: decisionLogParameters,
        responses: {
          200: answer(
            'One page; nextCursor is null on the last page',
            json({ type: 'object', required: ['events', 'nextCursor'], properties: { events: { type: 'array', items: ref('DecisionEvent') }, nextCursor: { type: ['string', 'null'] } } }),
          ),
          ...errorResponses(KEYED, KEYED_NOTES),
        },
      },
    },
    '/api/events/stream': {
      get: {
        operationId: 'streamEvents',
        summary: 'Event Stream: Server-Sent Events of new events matching the filters; each id is a cursor (an unknown parameter is a 400)',
        security: bearer,
        parameters: [...eventFilters, { name: 'Last-Event-ID', in: 'header', description: 'resume after this event (an id the stream sent); wins over cursor', schema: str }],
        responses: {
          200: answer('text/event-stream: one `data:` DecisionEvent per message, `id:` its cursor, heartbeat comments', { 'text/event-stream': { schema: str } }),
          ...errorResponses(KEYED, KEYED_NOTES),
        },
      },
    },
    '/api/events/{telemetryId}': {
      get: {
        operationId: 'getEvent',
        summary: 'One event with its explanation and the exact policy version that decided it',
        security: bearer,
        parameters: [telemetryIdParameter],
        responses: {
          200: answer(
            'The event; policyVersion is null for ingested events',
            json({
              allOf: [
                ref('DecisionEvent'),
                {
                  type: 'object',
                  required: ['policyVersion'],
                  properties: {
                    policyVersion: { type: ['object', 'null'], required: ['versionId', 'policyId', 'createdAt', 'compiled'], properties: { versionId: str, policyId: str, createdAt: dateTime, compiled: { type: 'object' } } },
                  },
                },
              ],
            }),
          ),
          ...errorResponses([...KEYED, 'not_found'], KEYED_NOTES),
        },
      },
    },
    '/healthz': {
      get: {
        operationId: 'healthz',
        summary: 'Liveness',
        responses: { 200: answer('alive', json({ type: 'object', required: ['status'], properties: { status: { const: 'ok' } } })), ...errorResponses([]) },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readyz',
        summary: "Readiness: store reachable, evaluation thread running, configuration loaded, policy versions; the shared state's reachability reported",
        responses: {
          200: answer('ready', json(ref('Readiness'))),
          503: answer('not_ready: the store is unreachable, or the evaluation thread is held back', json(ref('Readiness')), {
            'retry-after': { ...RETRY_AFTER_HEADER, required: false, description: 'seconds until the evaluation thread starts again, when that is what holds readiness back' },
          }),
          ...errorResponses([]),
        },
      },
    },
    '/metrics': {
      get: { operationId: 'metrics', summary: 'Prometheus metrics', responses: { 200: answer('text exposition format', { 'text/plain': { schema: str } }), ...errorResponses([]) } },
    },
    '/openapi.json': {
      get: { operationId: 'openapi', summary: 'This document', responses: { 200: answer('OpenAPI 3.1', json({ type: 'object' })), ...errorResponses([]) } },
    },
  } as Record<string, unknown>,
};
