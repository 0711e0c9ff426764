import type { Knex } from 'knex';
import type { EventFilters } from '../api/types.js';
import type { StoredEvent } from './eventStore.js';
import { dialectOf } from './dialect.js';
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
 * The environment's events matching the filter, as a query over `events as e`. `ordered` asks for
 * a plan that reads them in seq order. `facets`: the ids matching the filter's facet columns
 * (facets.ts), tested in their place.
 *
 * Facet and reason filters without an identifier never come here (eventStore reads them by facet). PostgreSQL's
 * planner chooses the identifier's index by its statistics; SQLite has none worth the name
 * (ANALYZE is never run on a live store), so for an ordered read the store names the index: the
 * actor's, else the resource's, walked newest first, the other filters tested on its rows.
 */
export function filteredEvents(knex: Knex, environment: string, f: EventFilter, ordered: boolean, facets?: readonly number[]): Knex.QueryBuilder {
  const sqlite = dialectOf(knex) === 'sqlite';
  const driver = sqlite && ordered ? IDENTIFIERS.find((key) => f[key] !== undefined) : undefined;
  const q = driver ? knex.select('e.*').from(knex.raw('?? as e indexed by ??', ['events', `events_env_${COLUMNS[driver]}_seq`])) : knex.select('e.*').from('events as e');
  q.where('e.environment', environment);
  for (const key of IDENTIFIERS) if (f[key] !== undefined) q.where(`e.${COLUMNS[key]}`, f[key]);
  if (facets) q.whereIn('e.facet', facets);
  if (f.reason !== undefined) withReason(q, environment, f.reason);
  if (f.fromMs !== undefined) q.where('e.created_at', '>=', f.fromMs);
  if (f.toMs !== undefined) q.where('e.created_at', '<', f.toMs);
  return q;
}

// The identifier filters, in SQLite's walk order: an actor's index first.
const IDENTIFIERS = ['actorId', 'resourceId'] as const;

/** How many predicates no single index answers alone; two or more may need a second plan (eventStore). */
export function predicateCount(f: EventFilter): number {
  return EQUALITY.filter((key) => f[key] !== undefined).length + (f.reason !== undefined ? 1 : 0);
}

/** The in-memory twin of filteredEvents, for events the live stream already holds. */
export function matchesFilter(f: EventFilter, e: StoredEvent): boolean {
  for (const key of EQUALITY) if (f[key] !== undefined && e[key] !== f[key]) return false;
  const at = Date.parse(e.createdAt);
  if (f.fromMs !== undefined && at < f.fromMs) return false;
  if (f.toMs !== undefined && at >= f.toMs) return false;
  if (f.reason !== undefined && !e.reasons.includes(f.reason)) return false;
  return true;
}
