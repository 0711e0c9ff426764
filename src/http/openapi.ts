import { AI_STATUSES, CHALLENGE_TYPES, DECISIONS, ERROR_CODES, REDACTION_STRATEGIES, RISK_BANDS } from '../api/types.js';

// OpenAPI 3.1 of the public API (CONTRACT "Service endpoints"). Enumerations come from the API
// types so the document cannot drift from what the service accepts.
const str = { type: 'string' } as const;
const num = { type: 'number' } as const;
const bool = { type: 'boolean' } as const;
const strings = { type: 'array', items: str } as const;
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: ref('Error') } } });
const bearer = [{ secretKey: [] }];

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
          challengeResult: { type: 'object', additionalProperties: false, properties: { type: { enum: CHALLENGE_TYPES }, passed: bool, challengeId: str } },
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
          401: errorResponse('missing_api_key or invalid_api_key'),
          403: errorResponse('publishable_key_not_allowed'),
          413: errorResponse('payload_too_large'),
          415: errorResponse('unsupported_media_type'),
          422: errorResponse('unknown_operation'),
          429: errorResponse('rate_limited'),
          503: errorResponse('store_unavailable'),
        },
      },
    },
    '/api/events/ingest': {
      post: {
        summary: 'Record a decision the caller already made',
        security: bearer,
        requestBody: { required: true, content: { 'application/json': { schema: ref('IngestRecord') } } },
        responses: {
          201: { description: 'Stored' },
          200: { description: 'Exact duplicate of a stored event' },
          400: errorResponse('invalid_json or invalid_request'),
          401: errorResponse('missing_api_key or invalid_api_key'),
          409: errorResponse('telemetry_id_conflict'),
        },
      },
    },
    '/healthz': { get: { summary: 'Liveness', responses: { 200: { description: 'alive' } } } },
    '/readyz': { get: { summary: 'Readiness: store reachable, configuration loaded, policy versions', responses: { 200: { description: 'ready' }, 503: { description: 'not ready' } } } },
    '/metrics': { get: { summary: 'Prometheus metrics', responses: { 200: { description: 'text exposition format' } } } },
  } as Record<string, unknown>,
};
