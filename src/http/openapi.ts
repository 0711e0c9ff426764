import { AI_STATUSES, CHALLENGE_TYPES, DECISIONS, ERROR_CODES, EVENT_SOURCES, REDACTION_STRATEGIES, RISK_BANDS } from '../api/types.js';

// OpenAPI 3.1 of the public API (CONTRACT "Service endpoints"). Enumerations come from the API
// types so the document cannot drift from what the service accepts.
const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const bool = { type: 'boolean' } as const;
const strings = { type: 'array', items: str } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ref('Error') } } });
const bearer = [{ secretKey: [] }];
// What every keyed route can answer besides its own: the key checks (a key not cached is read from
// the store), the key's quota, a bug.
const keyed = {
  401: errorResponse('missing_api_key or invalid_api_key'),
  403: errorResponse('publishable_key_not_allowed'),
  429: errorResponse('rate_limited: the key\'s quota is spent (retry-after)'),
  500: errorResponse('internal_error'),
  503: errorResponse('store_unavailable: the store cannot be read (retry-after)'),
};
const query = (name: string, schema: object, description?: string) => ({ name, in: 'query', schema, ...(description ? { description } : {}) });
// CONTRACT "Decision Logs": the filters shared by the list and the stream.
const eventFilters = [
  query('operationKey', str),
  query('actorId', str),
  query('resourceType', str),
  query('resourceId', str),
  query('decision', { enum: DECISIONS }),
  query('riskBand', { enum: RISK_BANDS }),
  query('source', { enum: EVENT_SOURCES }),
  query('reason', str, 'events whose reasons include this code'),
  query('from', { type: 'string', format: 'date-time' }, 'createdAt at or after (ISO 8601)'),
  query('to', { type: 'string', format: 'date-time' }, 'createdAt before (ISO 8601)'),
  query('cursor', str, 'opaque; the list continues after it (older), the stream resumes after it (newer)'),
];

export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'TPS: Transaction Protection Service', version: '0.1.0', description: 'Evaluate protected transactions and record decision evidence.' },
  components: {
    securitySchemes: { secretKey: { type: 'http', scheme: 'bearer', description: 'The environment secret key, svc_sec_…' } },
    schemas: {
      EvaluateRequest: {
        type: 'object',
        required: ['operationKey', 'actor', 'resource'],
        additionalProperties: false,
        properties: {
          operationKey: str,
          actor: {
            type: 'object',
            required: ['id'],
            additionalProperties: false,
            properties: { id: str, authenticated: bool, role: str, roles: strings, trusted: bool, sessionAgeMinutes: { type: 'number', minimum: 0 } },
          },
          resource: { type: 'object', required: ['type', 'id'], additionalProperties: false, properties: { type: str, id: str, ownerId: str, classification: str } },
          requestData: { type: 'object', properties: { requestedCount: { type: 'integer', minimum: 0 }, fields: strings, amount: num, currency: str } },
          session: {
            type: 'object',
            additionalProperties: false,
            properties: {
              sessionId: str,
              tabId: str,
              isNewDevice: bool,
              continuityStrength: { type: 'number', minimum: 0, maximum: 1 },
              recentHumanSignalAt: { type: 'string', format: 'date-time' },
              recentHumanSignalAgeSeconds: { type: 'number', minimum: 0 },
              geoChanged: bool,
              networkChanged: bool,
              ipAddress: str,
              userAgent: str,
            },
          },
          metadata: {
            type: 'object',
            additionalProperties: false,
            properties: {
              requestedCount: { type: 'integer', minimum: 0 },
              velocityWindowCount: { type: 'integer', minimum: 0 },
              changedFields: strings,
              resourceCount: { type: 'integer', minimum: 0 },
              abnormalSequence: bool,
              objectAccessRare: bool,
              suspiciousTimeWindow: bool,
              localHour: { type: 'integer', minimum: 0, maximum: 23 },
              proofToken: str,
              notes: str,
            },
          },
          challengeResult: { type: 'object', additionalProperties: false, properties: { type: { enum: CHALLENGE_TYPES, description: 'required when passed is true' }, passed: bool, challengeId: str } },
          rawSignals: { type: 'object', additionalProperties: { type: ['boolean', 'number'] } },
        },
      },
      EvaluateResponse: {
        type: 'object',
        required: ['decision', 'score', 'riskBand', 'reasons', 'telemetryId', 'operationKey', 'policyId', 'warnings'],
        properties: {
          decision: { enum: DECISIONS },
          score: { type: 'number', minimum: 0, maximum: 100 },
          riskBand: { enum: RISK_BANDS },
          reasons: strings,
          telemetryId: str,
          challenge: { type: 'object', properties: { type: { enum: CHALLENGE_TYPES }, id: str, expiresAt: { type: 'string', format: 'date-time' } } },
          redaction: { type: 'object', properties: { fields: strings, strategy: { enum: REDACTION_STRATEGIES } } },
          retryAfterSeconds: { type: 'integer' },
          policyVersionId: str,
          aiAssessment: { type: 'object', properties: { status: { enum: AI_STATUSES }, scoreDelta: num, model: str, rationale: str, labels: strings, latencyMs: num } },
          operationKey: str,
          operationDisplayName: str,
          actionType: str,
          resourceType: str,
          sensitivity: str,
          policyId: str,
          warnings: { type: 'array' },
        },
      },
      IngestRecord: {
        type: 'object',
        additionalProperties: false,
        required: ['operationKey', 'actorId', 'resourceType', 'resourceId', 'telemetryId', 'requestSummary', 'decision', 'score', 'reasons', 'normalizedSignals'],
        properties: {
          operationKey: str,
          actorId: str,
          resourceType: str,
          resourceId: str,
          telemetryId: str,
          requestSummary: { type: 'object' },
          decision: { enum: DECISIONS },
          score: { type: 'number', minimum: 0, maximum: 100 },
          reasons: strings,
          normalizedSignals: { type: 'object', additionalProperties: { type: 'number', minimum: 0, maximum: 1 } },
        },
      },
      IngestResponse: {
        type: 'object',
        required: ['telemetryId', 'stored'],
        properties: { telemetryId: str, stored: bool, duplicate: bool },
      },
      Readiness: {
        type: 'object',
        required: ['status', 'store', 'evaluation', 'configuration', 'policies'],
        properties: {
          status: { enum: ['ready', 'not_ready'] },
          store: { type: 'object', properties: { status: { enum: ['ok', 'unreachable'] }, dialect: str } },
          evaluation: { type: 'object', properties: { status: { enum: ['ok', 'restarting'] }, retryAfterSeconds: { type: 'integer' } } },
          configuration: {
            type: 'object',
            properties: {
              versionId: str,
              loadedAt: { type: 'string', format: 'date-time' },
              operations: { type: 'integer' },
              lastReload: { type: 'object', properties: { status: { enum: ['ok', 'rejected'] }, problems: { type: 'array', items: { type: 'object', properties: { file: str, line: { type: 'integer' }, path: str, message: str } } } } },
            },
          },
          policies: { type: 'array', items: { type: 'object', properties: { id: str, versionId: str } } },
          // Only when not ready: CONTRACT's error object beside the readiness fields.
          error: { type: 'object', required: ['code', 'message'], properties: { code: { enum: ['not_ready'] }, message: str } },
        },
      },
      DecisionEvent: {
        type: 'object',
        required: ['telemetryId', 'environment', 'source', 'createdAt', 'operationKey', 'actorId', 'resourceType', 'resourceId', 'decision', 'score', 'reasons', 'explanation'],
        properties: {
          telemetryId: str,
          environment: str,
          source: { enum: EVENT_SOURCES },
          createdAt: { type: 'string', format: 'date-time' },
          operationKey: str,
          actorId: str,
          resourceType: str,
          resourceId: str,
          decision: { enum: DECISIONS },
          score: { type: 'number', minimum: 0, maximum: 100 },
          riskBand: { enum: [...RISK_BANDS, null] },
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
          explanationUnreadable: { type: 'boolean', enum: [true], description: 'present, true, when this TPS cannot decode the stored explanation (a newer version wrote it, or the row is damaged): explanation is null, the other fields are as stored' },
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
              details: { type: 'array', items: { type: 'object', properties: { path: str, message: str } } },
            },
          },
        },
      },
    },
  },
  paths: {
    '/api/evaluate': {
      post: {
        summary: 'Evaluate one protected transaction and record the decision',
        security: bearer,
        requestBody: { required: true, content: { 'application/json': { schema: ref('EvaluateRequest') } } },
        responses: {
          200: { description: 'The decision (deny, throttle and step_up_required are answers, not errors)', content: { 'application/json': { schema: ref('EvaluateResponse') } } },
          400: errorResponse('invalid_json or invalid_request'),
          ...keyed,
          413: errorResponse('payload_too_large'),
          415: errorResponse('unsupported_media_type'),
          422: errorResponse('unknown_operation'),
          503: errorResponse('store_unavailable (the event could not be committed, or the store cannot be read: retry-after), evaluation_unavailable or state_unavailable (both with retry-after)'),
        },
      },
    },
    '/api/events/ingest': {
      post: {
        summary: 'Record a decision the caller already made',
        security: bearer,
        requestBody: { required: true, content: { 'application/json': { schema: ref('IngestRecord') } } },
        responses: {
          201: { description: 'Stored', content: { 'application/json': { schema: ref('IngestResponse') } } },
          200: { description: 'Exact duplicate of a stored event (stored: false, duplicate: true)', content: { 'application/json': { schema: ref('IngestResponse') } } },
          400: errorResponse('invalid_json or invalid_request'),
          ...keyed,
          409: errorResponse('telemetry_id_conflict'),
          413: errorResponse('payload_too_large'),
          415: errorResponse('unsupported_media_type'),
          503: errorResponse('store_unavailable: the event could not be recorded, or the store cannot be read (retry-after)'),
        },
      },
    },
    '/api/events': {
      get: {
        summary: "Decision Logs: the key's environment's events, newest first, filtered and paged",
        security: bearer,
        parameters: [...eventFilters, { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500, default: 50 } }],
        responses: {
          200: {
            description: 'One page; nextCursor is null on the last page',
            content: { 'application/json': { schema: { type: 'object', required: ['events', 'nextCursor'], properties: { events: { type: 'array', items: ref('DecisionEvent') }, nextCursor: { type: ['string', 'null'] } } } } },
          },
          400: errorResponse('invalid_request: a bad filter value, or an unknown parameter; details name it'),
          ...keyed,
        },
      },
    },
    '/api/events/stream': {
      get: {
        summary: 'Event Stream: Server-Sent Events of new events matching the filters; each id is a cursor',
        security: bearer,
        parameters: [...eventFilters, { name: 'Last-Event-ID', in: 'header', description: 'resume after this event (an id the stream sent)', schema: str }],
        responses: {
          200: { description: 'text/event-stream: one `data:` DecisionEvent per message, `id:` its cursor, heartbeat comments', content: { 'text/event-stream': { schema: str } } },
          400: errorResponse('invalid_request'),
          ...keyed,
        },
      },
    },
    '/api/events/{telemetryId}': {
      get: {
        summary: 'One event with its explanation and the exact policy version that decided it',
        security: bearer,
        parameters: [{ name: 'telemetryId', in: 'path', required: true, schema: str }],
        responses: {
          200: {
            description: 'The event; policyVersion is null for ingested events',
            content: {
              'application/json': {
                schema: {
                  allOf: [
                    ref('DecisionEvent'),
                    { type: 'object', properties: { policyVersion: { type: ['object', 'null'], properties: { versionId: str, policyId: str, createdAt: { type: 'string', format: 'date-time' }, compiled: { type: 'object' } } } } },
                  ],
                },
              },
            },
          },
          400: errorResponse('invalid_request: not a telemetryId ingest could have stored'),
          ...keyed,
          404: errorResponse('not_found: no such event in this environment'),
        },
      },
    },
    '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'alive', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } } } } } } },
    '/readyz': {
      get: {
        summary: 'Readiness: store reachable, configuration loaded, policy versions',
        responses: {
          200: { description: 'ready', content: { 'application/json': { schema: ref('Readiness') } } },
          503: { description: 'not_ready: the store is unreachable, or the evaluation thread is held back (retry-after)', content: { 'application/json': { schema: ref('Readiness') } } },
        },
      },
    },
    '/metrics': { get: { summary: 'Prometheus metrics', responses: { 200: { description: 'text exposition format' } } } },
    '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } } } },
  } as Record<string, unknown>,
};
