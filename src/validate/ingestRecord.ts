import { DECISIONS, type IngestRecord } from '../api/types.js';
import { check, freeFormProblems, id as identifier, mapOf, problemsError, strictObject, yup } from './kit.js';
import { CODE, MAX_OPERATION_KEY_LENGTH } from './characters.js';

// SPEC 2.3 with the bounds of SPEC 8. Lengths match the events columns; the telemetryId alphabet
// keeps it usable as-is in GET /api/events/{telemetryId}, where "." and ".." (any id of dots only,
// to be safe) would be path segments that URL normalisation removes, so no GET could reach them.
export const TELEMETRY_ID = /^(?!\.+$)[A-Za-z0-9._:-]{1,128}$/;
export const TELEMETRY_ID_RULE = 'must be 1 to 128 letters, digits or . _ : -, and not only dots';
export const SUMMARY_MAX_BYTES = 4096;
export const MAX_NORMALIZED_SIGNALS = 200;

const id = (max: number) => identifier(max).required();

export const ingestRecordSchema = strictObject({
  operationKey: id(MAX_OPERATION_KEY_LENGTH),
  actorId: id(256),
  resourceType: id(128),
  resourceId: id(256),
  telemetryId: yup
    .string()
    .required()
    .matches(TELEMETRY_ID, `\${path} ${TELEMETRY_ID_RULE}`)
    .notOneOf(['stream'], '${path} "stream" is reserved (GET /api/events/stream)'),
  requestSummary: yup
    .object()
    .default(undefined)
    .required()
    // One test: the walk first, so JSON.stringify never meets a summary nested deep enough to overflow it.
    .test({
      name: 'summary',
      skipAbsent: true,
      test(v: object | undefined) {
        if (typeof v !== 'object' || v === null) return true;
        const problems = freeFormProblems(v, this.path);
        if (problems.length) return problemsError(this, problems);
        return Buffer.byteLength(JSON.stringify(v)) <= SUMMARY_MAX_BYTES || this.createError({ message: `\${path} must be at most ${SUMMARY_MAX_BYTES} bytes of JSON` });
      },
    }),
  decision: yup.string().required().oneOf(DECISIONS),
  score: yup.number().required().min(0).max(100),
  reasons: yup
    .array(yup.string().required().matches(CODE, '${path} must be a reason code (letters, digits, _ . : -, at most 128)'))
    .max(64)
    .required(),
  normalizedSignals: mapOf(() => yup.number().required().min(0).max(1), CODE, 'is not a valid signal name (letters, digits, _ . : -, at most 128)')
    .required()
    .test('size', `\${path} must have at most ${MAX_NORMALIZED_SIGNALS} signals`, (v) => v === undefined || v === null || Object.keys(v).length <= MAX_NORMALIZED_SIGNALS),
});

export const validateIngestRecord = (body: unknown) => check<IngestRecord>(ingestRecordSchema as unknown as yup.Schema<IngestRecord>, body);
