import type { Explanation } from '../api/types.js';
import type { EventRecord, ReadEvent, StoredEvent } from './eventStore.js';
import { decodeExplanation, encodeExplanation } from './explanationCodec.js';

/** The unique key of an event, as one string. */
export const keyOf = (environment: string, telemetryId: string): string => `${environment}\u0000${telemetryId}`;

/** An events row as the database holds it. */
export interface EventRow {
  seq: number;
  telemetry_id: string;
  environment: string;
  source: string;
  created_at: number;
  operation_key: string;
  actor_id: string;
  resource_type: string;
  resource_id: string;
  decision: string;
  score: number;
  risk_band: string | null;
  reasons: string;
  policy_id: string | null;
  policy_version_id: string | null;
  monitored: boolean | number;
  request_summary: string;
  /** JSON text of rows written before migration 002; empty since. */
  explanation: string;
  /** The compressed explanation (explanationCodec.ts); null on rows written before migration 002. */
  explanation_z: Buffer | null;
  /** The event's facet (facets.ts). */
  facet: number | null;
}

/** The row of an event. */
export function toRow(e: EventRecord): Omit<EventRow, 'seq' | 'facet'> {
  return {
    telemetry_id: e.telemetryId,
    environment: e.environment,
    source: e.source,
    created_at: e.createdAt,
    operation_key: e.operationKey,
    actor_id: e.actorId,
    resource_type: e.resourceType,
    resource_id: e.resourceId,
    decision: e.decision,
    score: e.score,
    risk_band: e.riskBand,
    reasons: JSON.stringify(e.reasons),
    policy_id: e.policyId,
    policy_version_id: e.policyVersionId,
    monitored: e.monitored ?? false,
    request_summary: JSON.stringify(e.requestSummary),
    explanation: '',
    explanation_z: encodeExplanation(e.explanation),
  };
}

/** The columns a writer fills, in the order of rowValues. */
export const EVENT_COLUMNS = [
  'telemetry_id',
  'environment',
  'source',
  'created_at',
  'operation_key',
  'actor_id',
  'resource_type',
  'resource_id',
  'decision',
  'score',
  'risk_band',
  'reasons',
  'policy_id',
  'policy_version_id',
  'monitored',
  'request_summary',
  'explanation',
  'explanation_z',
] as const satisfies readonly (keyof Omit<EventRow, 'seq' | 'facet'>)[];

/** toRow as an array in EVENT_COLUMNS order, for a prepared multi-row insert. */
export function rowValues(e: EventRecord): unknown[] {
  const row = toRow(e);
  return EVENT_COLUMNS.map((c) => row[c]);
}

/** Every field of a row but its explanation. */
function fieldsOf(r: EventRow): Omit<StoredEvent, 'explanation'> {
  return {
    seq: Number(r.seq),
    telemetryId: r.telemetry_id,
    environment: r.environment,
    source: r.source as StoredEvent['source'],
    createdAt: new Date(Number(r.created_at)).toISOString(),
    operationKey: r.operation_key,
    actorId: r.actor_id,
    resourceType: r.resource_type,
    resourceId: r.resource_id,
    decision: r.decision as StoredEvent['decision'],
    score: Number(r.score),
    riskBand: r.risk_band as StoredEvent['riskBand'],
    reasons: JSON.parse(r.reasons) as string[],
    policyId: r.policy_id,
    policyVersionId: r.policy_version_id,
    monitored: Boolean(r.monitored),
    requestSummary: JSON.parse(r.request_summary) as Record<string, unknown>,
  };
}

const explanationOf = (r: EventRow): Explanation => (r.explanation_z ? decodeExplanation(r.explanation_z) : (JSON.parse(r.explanation) as Explanation));

/**
 * The event of a row; throws when its explanation cannot be decoded. For readers that need the
 * explanation itself (ingest's comparison, replay, to-fixture) and report such a row their own way.
 */
export function fromRow(r: EventRow): StoredEvent {
  return { ...fieldsOf(r), explanation: explanationOf(r) };
}

/**
 * The event of a row as the Decision Logs, the stream and export show it: an explanation this
 * version cannot decode (a newer TPS's format during a rolling upgrade, a damaged blob) is null and
 * marked, so one such row never stops a page or a stream. `unreadable` hears of it.
 */
export function readRow(r: EventRow, unreadable: (r: EventRow, err: unknown) => void): ReadEvent {
  const fields = fieldsOf(r);
  try {
    return { ...fields, explanation: explanationOf(r) };
  } catch (err) {
    unreadable(r, err);
    return { ...fields, explanation: null, explanationUnreadable: true };
  }
}
