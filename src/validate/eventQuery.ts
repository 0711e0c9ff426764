import { DECISIONS, EVENT_SOURCES, RISK_BANDS, type ErrorDetail } from '../api/types.js';
import { hasCursorForm } from '../events/cursor.js';
import type { EventFilter } from '../store/eventFilter.js';
import { check, id, strictObject, yup } from './kit.js';
import { CODE, MAX_OPERATION_KEY_LENGTH } from './characters.js';
import { boundMs, laterBound, offsetPlusRestored, parseInstant } from './timestamp.js';

// CONTRACT "Decision Logs": the query string of GET /api/events and GET /api/events/stream. A bad
// value is a 400 that names the parameter, never an empty list; an unknown parameter too, so a typo
// (`?decison=deny`) cannot silently widen a search.
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 500;
/** What a cursor that is not one of the caller's is told (the query's `cursor`, a stream's Last-Event-ID). */
export const NOT_OURS = 'is not a cursor this service issued to this environment';

// A date (UTC midnight) or a date-time with its offset, on a real date; a time without an offset
// would be ambiguous.
const dateOrInstant = (v: string) => parseInstant(v, { allowDate: true });

const instant = () =>
  yup
    .string()
    .test('iso8601', '${path} must be an ISO 8601 date or date-time with an offset, on a real date (2024-05-01 or 2024-05-01T12:00:00Z)', (v) => v === undefined || dateOrInstant(v) !== undefined);

const filterShape = {
  operationKey: id(MAX_OPERATION_KEY_LENGTH),
  actorId: id(),
  resourceType: id(128),
  resourceId: id(),
  decision: yup.string().oneOf(DECISIONS),
  riskBand: yup.string().oneOf(RISK_BANDS),
  source: yup.string().oneOf(EVENT_SOURCES),
  reason: yup.string().matches(CODE, '${path} must be a reason code (letters, digits, _ . : -, at most 128)'),
  from: instant(),
  to: instant(),
  // Only its form: whose cursor it is, the route asks with the key's environment (events/cursor.ts).
  cursor: yup.string().test('cursor', `\${path} ${NOT_OURS}`, (v) => v === undefined || hasCursorForm(v)),
};
const limit = yup
  .string()
  .test('limit', `\${path} must be an integer from 1 to ${MAX_LIMIT}`, (v) => v === undefined || (/^\d{1,4}$/.test(v) && Number(v) >= 1 && Number(v) <= MAX_LIMIT));
export const listSchema = strictObject({ ...filterShape, limit });
export const streamSchema = strictObject(filterShape);

type Query = Partial<Record<keyof typeof filterShape | 'limit', string>>;

export interface EventQuery {
  filter: EventFilter;
  limit: number;
  /** The cursor as given, of a cursor's form; the route decodes it in the key's environment. */
  cursor?: string;
}

export type Checked = { ok: true; value: EventQuery } | { ok: false; details: ErrorDetail[] };

/** Validates GET /api/events (stream: false) or GET /api/events/stream (stream: true, no limit). */
export function validateEventQuery(query: Record<string, unknown>, options: { stream?: boolean } = {}): Checked {
  const input = { ...query };
  // The `+` of an offset arrives from a query string as a space (timestamp.ts).
  for (const bound of ['from', 'to'] as const) if (typeof input[bound] === 'string') input[bound] = offsetPlusRestored(input[bound]);
  const checked = check<Query>((options.stream ? streamSchema : listSchema) as unknown as yup.Schema<Query>, input);
  if (!checked.ok) return checked;
  const q = checked.value;
  if (q.from !== undefined && q.to !== undefined && !laterBound(q.to, q.from)) return { ok: false, details: [{ path: 'to', message: 'to must be later than from' }] };
  const fromMs = q.from === undefined ? undefined : boundMs(q.from)!;
  const toMs = q.to === undefined ? undefined : boundMs(q.to)!;
  const filter: EventFilter = {
    operationKey: q.operationKey,
    actorId: q.actorId,
    resourceType: q.resourceType,
    resourceId: q.resourceId,
    decision: q.decision as EventFilter['decision'],
    riskBand: q.riskBand as EventFilter['riskBand'],
    source: q.source as EventFilter['source'],
    reason: q.reason,
    fromMs,
    toMs,
  };
  for (const key of Object.keys(filter) as (keyof EventFilter)[]) if (filter[key] === undefined) delete filter[key];
  return { ok: true, value: { filter, limit: q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit), cursor: q.cursor } };
}
