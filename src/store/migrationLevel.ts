import type { Knex } from 'knex';
import { migrationSource } from './migrations.js';

/**
 * How far a store is migrated, read from knex's record without writing (knex's own migrate.list
 * would create its tables): `behind` when a migration of this version has not run on it, and the
 * number of the newest one that has (`004`), or undefined when none has.
 */
export async function migrationLevel(knex: Knex): Promise<{ behind: boolean; at: string | undefined }> {
  const ours = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
  const done = (await knex.schema.hasTable('knex_migrations')) ? new Set((await knex('knex_migrations').select('name')).map((r: { name: string }) => r.name)) : new Set<string>();
  const applied = ours.filter((name) => done.has(name));
  return { behind: applied.length < ours.length, at: applied.at(-1)?.split('_')[0] };
}
