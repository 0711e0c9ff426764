import type { Knex } from 'knex';
import type { EventRecord } from './eventStore.js';
import { COLUMNS, type EventFilter } from './eventFilter.js';

/**
 * A facet is one combination of the filters that have few values: environment, operation, resource
 * type, decision, risk band and source. Each event stores its facet's id, under one (facet, seq)
 * index. A filter on any of these columns, in any combination, is first turned into the list of
 * matching facet ids from the small event_facets table. None: the answer is empty at once, however
 * many events each filter alone matches. Some: each facet's index range is read newest first and
 * the ranges are merged (eventStore.ts).
 */
export type Facet = readonly [environment: string, operationKey: string, resourceType: string, decision: string, riskBand: string, source: string];

export const FACET_FILTERS = ['operationKey', 'resourceType', 'decision', 'riskBand', 'source'] as const satisfies readonly (keyof EventFilter)[];
/** event_facets' columns, in the order of a Facet. */
export const FACET_COLUMNS = ['environment', ...FACET_FILTERS.map((key) => COLUMNS[key])];

export const facetOf = (e: EventRecord): Facet => [e.environment, e.operationKey, e.resourceType, e.decision, e.riskBand ?? '', e.source];

export const hasFacetFilter = (f: EventFilter): boolean => FACET_FILTERS.some((key) => f[key] !== undefined);

/** The query of the environment's facet ids that the filter's facet columns allow. */
function facetIdsQuery(knex: Knex, environment: string, f: EventFilter): Knex.QueryBuilder {
  const q = knex('event_facets').select('id').where('environment', environment);
  for (const key of FACET_FILTERS) if (f[key] !== undefined) q.where(COLUMNS[key], f[key]);
  return q;
}

/** The environment's facet ids that the filter's facet columns allow. */
export async function matchingFacets(knex: Knex, environment: string, f: EventFilter): Promise<number[]> {
  return (await facetIdsQuery(knex, environment, f)).map((r: { id: number | string }) => Number(r.id));
}

// Facet ids bound one by one in a query at most. Ingest takes any operationKey and resourceType, so
// an environment may hold more combinations than a statement takes parameters (SQLite 32,766,
// PostgreSQL 65,535).
const MAX_BOUND_FACETS = 1000;

/** Facet ids as the operand of an IN: the ids, or a query of them. */
export type FacetIdsIn = number[] | Knex.QueryBuilder;

/**
 * The facet ids (matchingFacets) as the operand of an IN: the ids themselves, as ever, or, past
 * MAX_BOUND_FACETS, the same lookup as a subquery.
 */
export function facetIdsIn(knex: Knex, environment: string, f: EventFilter, ids: number[]): FacetIdsIn {
  return ids.length <= MAX_BOUND_FACETS ? ids : facetIdsQuery(knex, environment, f);
}

/**
 * Facet ids a writer has seen committed, so a batch looks up only new combinations. A facet row is
 * never deleted or changed, so a remembered id stays true.
 */
export class FacetIds {
  private readonly ids = new Map<string, number>();

  /** The ids known here; undefined where the facet must be looked up or created. */
  known(facets: readonly Facet[]): (number | undefined)[] {
    return facets.map((f) => this.ids.get(f.join('\u0000')));
  }

  /** Call once the transaction that created or read them has committed. */
  remember(facets: readonly Facet[], ids: readonly number[]): void {
    facets.forEach((f, i) => this.ids.set(f.join('\u0000'), ids[i]!));
  }
}
