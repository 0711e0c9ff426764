import type { Knex } from 'knex';
import type { DecisionEvent, Explanation } from '../api/types.js';

/** A decision event as written: DecisionEvent with its time as epoch milliseconds. */
export interface EventRecord extends Omit<DecisionEvent, 'createdAt'> {
  createdAt: number;
  monitored?: boolean;
}

export interface StoredEvent extends DecisionEvent {
  seq: number;
  monitored: boolean;
}

/** Where decision events live. Writes come in batches: one transaction per batch (group commit). */
export interface EventStore {
  insertBatch(events: readonly EventRecord[]): Promise<void>;
  get(environment: string, telemetryId: string): Promise<StoredEvent | undefined>;
  count(environment?: string): Promise<number>;
}

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
  explanation: string;
}

export function toRow(e: EventRecord): Omit<EventRow, 'seq'> {
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
    explanation: JSON.stringify(e.explanation),
  };
}

export function fromRow(r: EventRow): StoredEvent {
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
    explanation: JSON.parse(r.explanation) as Explanation,
  };
}

// SQLite caps bound parameters per statement; 17 columns × 500 rows stays well under it.
const CHUNK = 500;

export class KnexEventStore implements EventStore {
  constructor(private readonly knex: Knex) {}

  async insertBatch(events: readonly EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    const rows = events.map(toRow);
    await this.knex.transaction(async (trx) => {
      for (let i = 0; i < rows.length; i += CHUNK) await trx('events').insert(rows.slice(i, i + CHUNK));
    });
  }

  async get(environment: string, telemetryId: string): Promise<StoredEvent | undefined> {
    const row = await this.knex<EventRow>('events').where({ environment, telemetry_id: telemetryId }).first();
    return row ? fromRow(row) : undefined;
  }

  async count(environment?: string): Promise<number> {
    const q = this.knex('events').count<{ n: number | string }[]>({ n: '*' });
    if (environment) q.where({ environment });
    const row = await q.first();
    return Number(row?.n ?? 0);
  }
}
