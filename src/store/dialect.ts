import type { Knex } from 'knex';

/** The two stores TPS runs on; knex's client name says which a connection is. */
export type Dialect = 'sqlite' | 'postgres';

export const dialectOf = (knex: { client: Knex.Client }): Dialect => (knex.client.config.client === 'pg' ? 'postgres' : 'sqlite');
