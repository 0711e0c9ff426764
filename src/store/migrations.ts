import type { Knex } from 'knex';
import { dialectOf } from './dialect.js';
import { dropEventBatches } from './eventWriteTx.js';
import { decodeExplanation } from './explanationCodec.js';
import { createIdChunkIndexSql, dropIdChunkIndexSql, ID_COLUMNS } from './idChunks.js';
import { reasonKeys } from './reasonIndex.js';
import { BUCKET_MS, runningBounds } from './timeMarks.js';

// Migrations live in code, so the compiled service and the CLI carry them with no file lookup.
interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

// Migration 002's filter columns. The enumerated ones have the values of src/api/types.ts, frozen
// here as a migration must be: a new value needs a new migration adding its PostgreSQL partial index.
const SEARCH_COLUMNS = ['operation_key', 'actor_id', 'resource_type', 'resource_id'];
const ENUM_COLUMNS: [string, readonly string[]][] = [
  ['decision', ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny']],
  ['risk_band', ['low', 'medium', 'high']],
  ['source', ['evaluate', 'ingest']],
];

// Migration 004's facet columns, in the order of the facets table.
const FACET_COLUMNS = ['environment', 'operation_key', 'resource_type', 'decision', 'risk_band', 'source'];

/**
 * Sets one column of many events in one statement: `rows` of [seq, value] bound as a single JSON
 * array, `value` the SQL that reads a row's value from its JSON element. One statement per event
 * would take hours on a store of millions.
 */
async function setBySeq(knex: Knex, column: string, rows: readonly (readonly [number, unknown])[], value: (element: string) => string): Promise<void> {
  const sqlite = dialectOf(knex) === 'sqlite';
  const from = sqlite ? 'json_each(?) AS j' : 'jsonb_array_elements(?::jsonb) AS j(value)';
  const seq = sqlite ? 'j.value->>0' : '(j.value->>0)::bigint';
  await knex.raw(`UPDATE events SET ?? = ${value('j.value')} FROM ${from} WHERE events.seq = ${seq}`, [column, JSON.stringify(rows)]);
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
  {
    // Decision Logs (issue 3): an index per filter, each led by environment and ending in seq so a
    // filtered page is one ordered index range read newest first; reason keys (reasonIndex.ts) serve
    // the reason filter; the explanation moves to a compressed column (explanationCodec.ts).
    name: '002_event_search',
    async up(knex) {
      const sqlite = dialectOf(knex) === 'sqlite';
      await knex.schema.alterTable('events', (t) => {
        t.binary('explanation_z');
        for (const column of sqlite ? [...SEARCH_COLUMNS, ...ENUM_COLUMNS.map(([c]) => c)] : SEARCH_COLUMNS) t.index(['environment', column, 'seq'], `events_env_${column}_seq`);
      });
      if (!sqlite) {
        // PostgreSQL splits a b-tree page in half when rows are appended in the middle of it, which
        // is where (environment, decision, seq) gets each new row: such indexes sit half empty. A
        // partial index per value appends at its right edge and stays full; the planner picks it
        // because the value is a bound parameter of an unnamed statement, planned with it.
        for (const [column, values] of ENUM_COLUMNS) {
          for (const value of values) await knex.raw(`CREATE INDEX ?? ON events (environment, seq) WHERE ?? = '${value}'`, [`events_env_seq_${column}_${value}`, column]);
        }
      }
      if (sqlite) {
        // WITHOUT ROWID: the primary key is the table, so an entry is one small b-tree cell.
        await knex.raw('CREATE TABLE event_reasons (key integer NOT NULL, seq bigint NOT NULL, PRIMARY KEY (key, seq)) WITHOUT ROWID');
      } else {
        // A GIN index compresses its postings to a few bytes each, where a side table would cost
        // a heap row and a b-tree entry per reason.
        await knex.schema.alterTable('events', (t) => t.specificType('reason_keys', 'integer[]'));
        await knex.raw('CREATE INDEX events_reason_keys ON events USING gin (reason_keys)');
      }
      // Time ranges as seq ranges (timeMarks.ts).
      await knex.schema.createTable('event_time_marks', (t) => {
        t.string('environment', 64).notNullable();
        t.bigInteger('bucket').notNullable();
        t.bigInteger('lo').notNullable();
        t.bigInteger('hi').notNullable();
        t.primary(['environment', 'bucket']);
      });
      const buckets: { environment: string; bucket: number | string; lo: number | string; hi: number | string }[] = await knex('events')
        .select('environment', knex.raw(`created_at / ${BUCKET_MS} as bucket`), knex.raw('min(seq) as lo'), knex.raw('max(seq) as hi'))
        .groupByRaw(`environment, created_at / ${BUCKET_MS}`);
      await knex.batchInsert('event_time_marks', runningBounds(buckets), 500);
      // Index the reasons of the events stored before this migration.
      for (let after = 0; ; ) {
        const rows: { seq: number; environment: string; reasons: string }[] = await knex('events').select('seq', 'environment', 'reasons').where('seq', '>', after).orderBy('seq').limit(1000);
        if (rows.length === 0) break;
        if (sqlite) {
          const entries = rows.flatMap((r) => reasonKeys(r.environment, JSON.parse(r.reasons) as string[]).map((key) => ({ key, seq: Number(r.seq) })));
          for (let i = 0; i < entries.length; i += 500) await knex('event_reasons').insert(entries.slice(i, i + 500));
        } else {
          const keys = rows.map((r) => [Number(r.seq), reasonKeys(r.environment, JSON.parse(r.reasons) as string[])] as const);
          await setBySeq(knex, 'reason_keys', keys, (v) => `ARRAY(SELECT jsonb_array_elements_text(${v}->1)::integer)`);
        }
        after = Number(rows[rows.length - 1]!.seq);
      }
    },
    async down(knex) {
      const sqlite = dialectOf(knex) === 'sqlite';
      // Events stored since keep their explanation only compressed: back to the text column first,
      // or dropping explanation_z would lose it.
      for (let after = 0; ; ) {
        const rows: { seq: number; explanation_z: Buffer }[] = await knex('events').select('seq', 'explanation_z').whereNotNull('explanation_z').where('seq', '>', after).orderBy('seq').limit(1000);
        if (rows.length === 0) break;
        await setBySeq(knex, 'explanation', rows.map((r) => [Number(r.seq), JSON.stringify(decodeExplanation(r.explanation_z))] as const), (v) => `${v}->>1`);
        after = Number(rows[rows.length - 1]!.seq);
      }
      await knex.schema.dropTableIfExists('event_reasons');
      await knex.schema.dropTableIfExists('event_time_marks');
      if (!sqlite) await knex.raw('DROP INDEX IF EXISTS events_reason_keys');
      if (!sqlite) for (const [column, values] of ENUM_COLUMNS) for (const value of values) await knex.raw('DROP INDEX IF EXISTS ??', [`events_env_seq_${column}_${value}`]);
      await knex.schema.alterTable('events', (t) => {
        for (const column of sqlite ? [...SEARCH_COLUMNS, ...ENUM_COLUMNS.map(([c]) => c)] : SEARCH_COLUMNS) t.dropIndex([], `events_env_${column}_seq`);
        t.dropColumn('explanation_z');
        if (!sqlite) t.dropColumn('reason_keys');
      });
    },
  },
  {
    // Policy as code (issue 5): the operation catalogue as the YAML defines it, upserted by the
    // catalog seed (seeds/01_catalog.ts) so the console and SQL can join events to operations.
    name: '003_operations',
    async up(knex) {
      await knex.schema.createTable('operations', (t) => {
        t.string('key', 128).primary();
        t.string('display_name', 200).notNullable();
        t.string('action_type', 32).notNullable();
        t.string('resource_type', 128).notNullable();
        t.string('sensitivity', 16).notNullable();
        t.string('policy_id', 128).notNullable();
        t.string('policy_version_id', 64).notNullable();
        t.string('mode', 16).notNullable();
        t.text('environments');
        t.string('source_file', 512).notNullable();
        t.string('config_version_id', 64).notNullable();
        t.bigInteger('updated_at').notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('operations');
    },
  },
  {
    // Facets (facets.ts): the filters with few values (operation, resource type, decision, risk
    // band, source) as one id per combination, with one (facet, seq) index in place of an index
    // per column. Any combination of them becomes a list of facet ids, read newest first.
    name: '004_event_facets',
    async up(knex) {
      const sqlite = dialectOf(knex) === 'sqlite';
      await knex.schema.createTable('event_facets', (t) => {
        t.increments('id').primary();
        t.string('environment', 64).notNullable();
        t.string('operation_key', 128).notNullable();
        t.string('resource_type', 128).notNullable();
        t.string('decision', 32).notNullable();
        // '' for no band: a NULL would make every such combination unique.
        t.string('risk_band', 16).notNullable();
        t.string('source', 16).notNullable();
        t.unique(['environment', 'operation_key', 'resource_type', 'decision', 'risk_band', 'source']);
      });
      await knex.raw(`INSERT INTO event_facets (${FACET_COLUMNS.join(', ')}) SELECT DISTINCT ${FACET_COLUMNS.map((c) => (c === 'risk_band' ? "coalesce(risk_band, '')" : c)).join(', ')} FROM events`);
      await knex.schema.alterTable('events', (t) => t.integer('facet'));
      const same = FACET_COLUMNS.map((c) => (c === 'risk_band' ? "f.risk_band = coalesce(events.risk_band, '')" : `f.${c} = events.${c}`)).join(' AND ');
      if (sqlite) await knex.raw(`UPDATE events SET facet = (SELECT f.id FROM event_facets f WHERE ${same})`);
      else await knex.raw(`UPDATE events SET facet = f.id FROM event_facets f WHERE ${same}`);
      await knex.schema.alterTable('events', (t) => t.index(['facet', 'seq'], 'events_facet_seq'));
      // The reason index becomes (key, facet, seq) in both stores, so a reason with facet filters is
      // read like facets alone: one ordered range per (reason, facet).
      await knex.raw(`CREATE TABLE event_reasons_004 (key integer NOT NULL, facet integer NOT NULL, seq bigint NOT NULL, PRIMARY KEY (key, facet, seq))${sqlite ? ' WITHOUT ROWID' : ''}`);
      if (sqlite) {
        await knex.raw('INSERT INTO event_reasons_004 (key, facet, seq) SELECT r.key, e.facet, r.seq FROM event_reasons r JOIN events e ON e.seq = r.seq');
        await knex.raw('DROP TABLE event_reasons');
        for (const column of FACET_COLUMNS.slice(1)) await knex.raw('DROP INDEX IF EXISTS ??', [`events_env_${column}_seq`]);
      } else {
        await knex.raw('INSERT INTO event_reasons_004 (key, facet, seq) SELECT DISTINCT k.key, e.facet, e.seq FROM events e, unnest(e.reason_keys) AS k(key)');
        await knex.raw('DROP INDEX IF EXISTS events_reason_keys');
        await knex.schema.alterTable('events', (t) => t.dropColumn('reason_keys'));
        for (const column of ['operation_key', 'resource_type']) await knex.raw('DROP INDEX IF EXISTS ??', [`events_env_${column}_seq`]);
        for (const [column, values] of ENUM_COLUMNS) for (const value of values) await knex.raw('DROP INDEX IF EXISTS ??', [`events_env_seq_${column}_${value}`]);
      }
      await knex.raw('ALTER TABLE event_reasons_004 RENAME TO event_reasons');
    },
    async down(knex) {
      const sqlite = dialectOf(knex) === 'sqlite';
      await knex.schema.alterTable('events', (t) => {
        for (const column of sqlite ? FACET_COLUMNS.slice(1) : ['operation_key', 'resource_type']) t.index(['environment', column, 'seq'], `events_env_${column}_seq`);
      });
      if (!sqlite) {
        for (const [column, values] of ENUM_COLUMNS) {
          for (const value of values) await knex.raw(`CREATE INDEX ?? ON events (environment, seq) WHERE ?? = '${value}'`, [`events_env_seq_${column}_${value}`, column]);
        }
      }
      if (sqlite) {
        await knex.raw('CREATE TABLE event_reasons_003 (key integer NOT NULL, seq bigint NOT NULL, PRIMARY KEY (key, seq)) WITHOUT ROWID');
        await knex.raw('INSERT INTO event_reasons_003 (key, seq) SELECT key, seq FROM event_reasons');
        await knex.raw('DROP TABLE event_reasons');
        await knex.raw('ALTER TABLE event_reasons_003 RENAME TO event_reasons');
      } else {
        await knex.schema.alterTable('events', (t) => t.specificType('reason_keys', 'integer[]'));
        await knex.raw('UPDATE events e SET reason_keys = r.keys FROM (SELECT seq, array_agg(key) AS keys FROM event_reasons GROUP BY seq) r WHERE r.seq = e.seq');
        await knex.raw('CREATE INDEX events_reason_keys ON events USING gin (reason_keys)');
        await knex.raw('DROP TABLE event_reasons');
      }
      await knex.schema.alterTable('events', (t) => {
        t.dropIndex([], 'events_facet_seq');
        t.dropColumn('facet');
      });
      await knex.schema.dropTableIfExists('event_facets');
    },
  },
  {
    // SQLite's identifier indexes led by the event's chunk of seqs (idChunks.ts), so that a commit
    // writes a few hot leaves of them rather than a random leaf each. PostgreSQL keeps its own.
    name: '005_event_id_chunks',
    async up(knex) {
      if (dialectOf(knex) !== 'sqlite') return;
      for (const column of ID_COLUMNS) {
        await knex.raw('DROP INDEX IF EXISTS ??', [`events_env_${column}_seq`]);
        await knex.raw(createIdChunkIndexSql(column));
      }
    },
    async down(knex) {
      if (dialectOf(knex) !== 'sqlite') return;
      for (const column of ID_COLUMNS) {
        await knex.raw(dropIdChunkIndexSql(column));
        await knex.schema.alterTable('events', (t) => t.index(['environment', column, 'seq'], `events_env_${column}_seq`));
      }
    },
  },
  {
    // The service's own secrets (serviceSecrets.ts), one per name, shared by every process on the
    // store: the key of the Decision Logs cursors (events/cursor.ts).
    name: '006_service_secrets',
    async up(knex) {
      await knex.schema.createTable('service_secrets', (t) => {
        t.string('name', 64).primary();
        t.binary('value').notNullable();
      });
    },
    async down(knex) {
      await knex.schema.dropTableIfExists('service_secrets');
    },
  },
];

/** A migration's step, run once the writer's TEMP trigger is gone: it names tables a step renames or drops (dropEventBatches). */
const afterDroppingBatches =
  (step: (knex: Knex) => Promise<void>) =>
  async (knex: Knex): Promise<void> => {
    await dropEventBatches(knex);
    await step(knex);
  };

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: async () => migrations,
  getMigrationName: (m) => m.name,
  getMigration: async (m) => ({ ...m, up: afterDroppingBatches(m.up), down: afterDroppingBatches(m.down) }),
};
