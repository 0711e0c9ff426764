import type { Knex } from 'knex';

// Migrations live in code, so the compiled service and the CLI carry them with no file lookup.
interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: Migration[] = [
  {
    name: '001_core',
    async up(knex) {
      await knex.schema.createTable('environments', (t) => {
        t.string('name', 64).primary();
        t.bigInteger('created_at').notNullable();
      });
      await knex.schema.createTable('api_keys', (t) => {
        t.string('id', 32).primary();
        t.string('environment', 64).notNullable().references('name').inTable('environments');
        t.string('kind', 16).notNullable();
        t.string('hash', 64).notNullable().unique();
        t.string('hint', 32).notNullable();
        t.string('label', 200);
        t.bigInteger('created_at').notNullable();
        t.bigInteger('revoked_at');
      });
      await knex.schema.createTable('policy_versions', (t) => {
        t.string('version_id', 64).primary();
        t.string('policy_id', 128).notNullable();
        t.text('compiled').notNullable();
        t.bigInteger('created_at').notNullable();
        t.index(['policy_id', 'created_at']);
      });
      await knex.schema.createTable('events', (t) => {
        t.bigIncrements('seq').primary();
        t.string('telemetry_id', 128).notNullable();
        t.string('environment', 64).notNullable();
        t.string('source', 16).notNullable();
        t.bigInteger('created_at').notNullable();
        t.string('operation_key', 128).notNullable();
        t.string('actor_id', 256).notNullable();
        t.string('resource_type', 128).notNullable();
        t.string('resource_id', 256).notNullable();
        t.string('decision', 32).notNullable();
        t.double('score').notNullable();
        t.string('risk_band', 16);
        t.text('reasons').notNullable();
        t.string('policy_id', 128);
        t.string('policy_version_id', 64);
        t.boolean('monitored').notNullable().defaultTo(false);
        t.text('request_summary').notNullable();
        t.text('explanation').notNullable();
        t.unique(['environment', 'telemetry_id']);
        t.index(['environment', 'seq']);
      });
    },
    async down(knex) {
      for (const table of ['events', 'policy_versions', 'api_keys', 'environments']) await knex.schema.dropTableIfExists(table);
    },
  },
];

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => m,
};
