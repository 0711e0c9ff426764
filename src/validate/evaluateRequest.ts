import { CHALLENGE_TYPES, type EvaluateRequest } from '../api/types.js';
import { compileCheck, mapOf, strictObject, yup } from './kit.js';

// SPEC 2.1 and the bounds of SPEC 8. Strings carry identifiers, so they are short; the caps stop a
// caller from parking whole records in fields meant for ids (SPEC 1, last point).
const id = (max = 256) => yup.string().min(1).max(max);
const names = () => yup.array(yup.string().min(1).max(128).required()).max(200);
const count = () => yup.number().integer().min(0);

const isoTimestamp = yup
  .string()
  .max(64)
  .test('iso8601', '${path} must be an ISO 8601 timestamp', (v) => v === undefined || (/^\d{4}-\d{2}-\d{2}T/.test(v) && !Number.isNaN(Date.parse(v))));

export const evaluateRequestSchema = strictObject({
  operationKey: id(128).required(),
  actor: strictObject({
    id: id().required(),
    authenticated: yup.boolean(),
    role: id(128),
    roles: names(),
    trusted: yup.boolean(),
    sessionAgeMinutes: yup.number().min(0),
  })
    .default(undefined)
    .required(),
  resource: strictObject({
    type: id(128).required(),
    id: id().required(),
    ownerId: id(),
    classification: id(64),
  })
    .default(undefined)
    .required(),
  requestData: yup
    .object({
      requestedCount: count(),
      fields: names(),
      amount: yup.number(),
      currency: yup.string().max(16),
    })
    .strict()
    .default(undefined),
  session: strictObject({
    sessionId: id(),
    tabId: id(),
    isNewDevice: yup.boolean(),
    continuityStrength: yup.number().min(0).max(1),
    recentHumanSignalAt: isoTimestamp,
    recentHumanSignalAgeSeconds: yup.number().min(0),
    geoChanged: yup.boolean(),
    networkChanged: yup.boolean(),
    ipAddress: yup.string().max(64),
    userAgent: yup.string().max(1024),
  }).default(undefined),
  metadata: strictObject({
    requestedCount: count(),
    velocityWindowCount: count(),
    changedFields: names(),
    resourceCount: count(),
    abnormalSequence: yup.boolean(),
    objectAccessRare: yup.boolean(),
    suspiciousTimeWindow: yup.boolean(),
    localHour: yup.number().integer().min(0).max(23),
    proofToken: yup.string().max(4096),
    notes: yup.string().max(1000),
  }).default(undefined),
  challengeResult: strictObject({
    type: yup.string().oneOf(CHALLENGE_TYPES),
    passed: yup.boolean(),
    challengeId: id(128),
  }).default(undefined),
  rawSignals: mapOf(
    () =>
      yup.mixed().test('bool-or-number', '${path} must be a boolean or a number', (v) => typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))),
    /^[A-Za-z0-9_.:-]{1,64}$/,
    'is not a valid signal name (letters, digits, _ . : -, at most 64)',
  ),
});

// Compiled once: valid requests skip yup's machinery, invalid ones get yup's own errors (kit.ts).
export const validateEvaluateRequest = compileCheck<EvaluateRequest>(evaluateRequestSchema as unknown as yup.Schema<EvaluateRequest>);
