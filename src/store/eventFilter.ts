import type { Knex } from 'knex';
import type { Decision, EventSource, RiskBand } from '../api/types.js';
import type { StoredEvent } from './eventStore.js';
import { whereReason } from './reasonIndex.js';

/**
 * The Decision Logs filters (CONTRACT), already validated. The same filter runs as SQL (list,
 * export, stream catch-up) and in memory (live stream fan-out); both live here so they cannot drift.
 */
export interface EventFilter {
  operationKey?: string;
  actorId?: string;
  resourceType?: string;
  resourceId?: string;
  decision?: Decision;
  riskBand?: RiskBand;
  source?: EventSource;
  reason?: string;
  /** Inclusive lower bound of createdAt, epoch ms. */
  fromMs?: number;
  /** Exclusive upper bound of createdAt, epoch ms. */
  toMs?: number;
}

const COLUMNS = {
  operationKey: 'operation_key',
  actorId: 'actor_id',
  resourceType: 'resource_type',
  resourceId: 'resource_id',
  decision: 'decision',
  riskBand: 'risk_band',
  source: 'source',
} as const satisfies Partial<Record<keyof EventFilter, string>>;

const EQUALITY = Object.keys(COLUMNS) as (keyof typeof COLUMNS)[];

/** Adds the environment and the filter to a query over `events as e` (reason: see reasonIndex.ts). */
export function applyFilter(q: Knex.QueryBuilder, environment: string, f: EventFilter): Knex.QueryBuilder {
  q.where('e.environment', environment);
  for (const key of EQUALITY) if (f[key] !== undefined) q.where(`e.${COLUMNS[key]}`, f[key]);
  if (f.fromMs !== undefined) q.where('e.created_at', '>=', f.fromMs);
  if (f.toMs !== undefined) q.where('e.created_at', '<', f.toMs);
  if (f.reason !== undefined) whereReason(q, environment, f.reason);
  return q;
}

/** The in-memory twin of applyFilter, for events the live stream already holds. */
export function matchesFilter(f: EventFilter, e: StoredEvent): boolean {
  for (const key of EQUALITY) if (f[key] !== undefined && e[key] !== f[key]) return false;
  const at = Date.parse(e.createdAt);
  if (f.fromMs !== undefined && at < f.fromMs) return false;
  if (f.toMs !== undefined && at >= f.toMs) return false;
  if (f.reason !== undefined && !e.reasons.includes(f.reason)) return false;
  return true;
}
