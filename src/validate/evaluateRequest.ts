import { CHALLENGE_TYPES, type EvaluateRequest } from '../api/types.js';
import { compileCheck, finite, freeForm, id, mapOf, strictObject, text, yup } from './kit.js';
import { MAX_OPERATION_KEY_LENGTH } from './characters.js';
import { MAX_CLOCK_SKEW_MS, parseInstant } from './timestamp.js';

// SPEC 2.1 and the bounds of SPEC 8. Strings carry identifiers, so they are short; the caps stop a
// caller from parking whole records in fields meant for ids (SPEC 1, last point).
const names = () => yup.array(id(128).required()).max(200);
const count = () => yup.number().integer().min(0);
/** A rawSignals key: the caller's own signal name. */
export const RAW_SIGNAL_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** The clock a request is validated against (a fixture's `at`); default now. */
export interface ValidationClock {
  nowMs: number;
}

// An offset is required (without one the answer would depend on the server's time zone), and a
// signal from the future would read as "just now" for as long as the caller likes.
const signalTimestamp = yup
  .string()
  .max(64)
  .test({
    name: 'timestamp',
    skipAbsent: true,
    test(v: string | undefined) {
      if (v === undefined) return true;
      const at = parseInstant(v);
      if (at === undefined) return this.createError({ message: '${path} must be an ISO 8601 date-time with an offset, on a real date (2025-01-08T12:00:00Z, 2025-01-08T13:00:00+01:00)' });
      const now = (this.options.context as ValidationClock | undefined)?.nowMs ?? Date.now();
      return at <= now + MAX_CLOCK_SKEW_MS || this.createError({ message: `\${path} must not be more than ${MAX_CLOCK_SKEW_MS / 60_000} minutes in the future` });
    },
  });

const requestDataShape = { requestedCount: count(), fields: names(), amount: finite(), currency: text(16) };

// SPEC §3 rule 2: the retry says which challenge it passed. A passed result without a type would
// satisfy a challenge of any type (a passkey where a proof token was asked).
const typeWhenPassed = {
  name: 'type-when-passed',
  message: '${path} is required when challengeResult.passed is true',
  test(this: yup.TestContext, v: string | undefined) {
    return v !== undefined || (this.parent as { passed?: unknown } | undefined)?.passed !== true;
  },
};

/**
 * The evaluate request's shape, one for every path: the API, fixtures and `tps explain` (a retry a
 * fixture or a replay builds names the challenge type it passed, as a client's must).
 */
export const evaluateRequestSchema = strictObject({
  operationKey: id(MAX_OPERATION_KEY_LENGTH).required(),
  actor: strictObject({
    id: id().required(),
    authenticated: yup.boolean(),
    role: id(128),
    roles: names(),
    trusted: yup.boolean(),
    sessionAgeMinutes: finite().min(0),
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
    .object(requestDataShape)
    .strict()
    .default(undefined)
    // Any other keys are the caller's own: safe keys and strings, finite numbers, bounded nesting.
    .test(freeForm(Object.keys(requestDataShape))),
  session: strictObject({
    sessionId: id(),
    tabId: id(),
    isNewDevice: yup.boolean(),
    continuityStrength: yup.number().min(0).max(1),
    recentHumanSignalAt: signalTimestamp,
    recentHumanSignalAgeSeconds: finite().min(0),
    geoChanged: yup.boolean(),
    networkChanged: yup.boolean(),
    ipAddress: text(64),
    userAgent: text(1024),
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
    proofToken: text(4096),
    notes: text(1000),
  }).default(undefined),
  challengeResult: strictObject({
    type: yup.string().oneOf(CHALLENGE_TYPES).test(typeWhenPassed),
    passed: yup.boolean(),
    challengeId: id(128),
  }).default(undefined),
  rawSignals: mapOf(
    () =>
      yup.mixed().test('bool-or-number', '${path} must be a boolean or a number', (v) => typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))),
    RAW_SIGNAL_NAME,
    'is not a valid signal name (letters, digits, _ . : -, at most 64)',
  ),
});

// Compiled once: valid requests skip yup's machinery, invalid ones get yup's own errors (kit.ts).
export const validateEvaluateRequest = compileCheck<EvaluateRequest>(evaluateRequestSchema as unknown as yup.Schema<EvaluateRequest>);
