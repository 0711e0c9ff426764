import type { Knex } from 'knex';
import type { EventFilters } from '../api/types.js';
import type { StoredEvent } from './eventStore.js';
import type { FacetIdsIn } from './facets.js';
import { withReason } from './reasonIndex.js';

/**
 * The Decision Logs filters (CONTRACT's query parameters, src/api/types.ts), validated and with the
 * time range as epoch ms. The same filter runs as SQL (list,
 * export, stream catch-up) and in memory (live stream fan-out); both live here so they cannot drift.
 */
export type EventFilter = Omit<EventFilters, 'from' | 'to' | 'limit' | 'cursor'> & {
  /** Inclusive lower bound of createdAt, epoch ms. */
  fromMs?: number;
  /** Exclusive upper bound of createdAt, epoch ms. */
  toMs?: number;
};

export const COLUMNS = {
  operationKey: 'operation_key',
  actorId: 'actor_id',
  resourceType: 'resource_type',
  resourceId: 'resource_id',
  decision: 'decision',
  riskBand: 'risk_band',
  source: 'source',
} as const satisfies Partial<Record<keyof EventFilter, string>>;

const EQUALITY = Object.keys(COLUMNS) as (keyof typeof COLUMNS)[];

/**
 * The environment's events matching the filter, as a query over `events as e`. `facets`: the ids
 * matching the filter's facet columns, or a subquery of them (facets.ts, facetIdsIn), tested in
 * their place.
 *
 * Facet and reason filters without an identifier never come here (eventStore reads them by facet),
 * nor does SQLite's ordered read of an identifier (eventStore reads it by chunk, idChunks.ts).
 * PostgreSQL's planner chooses the identifier's index by its statistics.
 */
export function filteredEvents(knex: Knex, environment: string, f: EventFilter, facets?: FacetIdsIn): Knex.QueryBuilder {
  const q = knex.select('e.*').from('events as e');
  q.where('e.environment', environment);
  for (const key of IDENTIFIERS) if (f[key] !== undefined) q.where(`e.${COLUMNS[key]}`, f[key]);
  if (facets) q.whereIn('e.facet', facets);
  if (f.reason !== undefined) withReason(q, environment, f.reason);
  if (f.fromMs !== undefined) q.where('e.created_at', '>=', f.fromMs);
  if (f.toMs !== undefined) q.where('e.created_at', '<', f.toMs);
  return q;
}

const IDENTIFIERS = ['actorId', 'resourceId'] as const;

/** How many predicates no single index answers alone; two or more may need a second plan (eventStore). */
export function predicateCount(f: EventFilter): number {
  return EQUALITY.filter((key) => f[key] !== undefined).length + (f.reason !== undefined ? 1 : 0);
}

/** The in-memory twin of filteredEvents, for events the live stream already holds. */
export function matchesFilter(f: EventFilter, e: Omit<StoredEvent, 'explanation'>): boolean {
  for (const key of EQUALITY) if (f[key] !== undefined && e[key] !== f[key]) return false;
  const at = Date.parse(e.createdAt);
  if (f.fromMs !== undefined && at < f.fromMs) return false;
  if (f.toMs !== undefined && at >= f.toMs) return false;
  if (f.reason !== undefined && !e.reasons.includes(f.reason)) return false;
  return true;
}
