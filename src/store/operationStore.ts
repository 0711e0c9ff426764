import type { Knex } from 'knex';
import type { Catalog } from '../policy/catalog.js';

export interface OperationRow {
  key: string;
  display_name: string;
  action_type: string;
  resource_type: string;
  sensitivity: string;
  policy_id: string;
  policy_version_id: string;
  mode: string;
  environments: string | null;
  source_file: string;
  config_version_id: string;
  updated_at: number;
}

/** The operations table: the catalogue of operations/*.yaml, mirrored into the store (migration 003). */
export class OperationStore {
  constructor(private readonly knex: Knex) {}

  /**
   * Makes the table hold exactly the catalogue's operations: inserts new keys, updates changed
   * ones, deletes keys the YAML no longer defines. Rerunning it changes nothing. A row is only
   * rewritten when its content changed, so updated_at says when an operation last changed.
   */
  async sync(catalog: Catalog, nowMs = Date.now()): Promise<{ inserted: number; updated: number; deleted: number; unchanged: number }> {
    return this.knex.transaction(async (trx) => {
      const existing = new Map((await trx<OperationRow>('operations').select()).map((r) => [r.key, r]));
      const counts = { inserted: 0, updated: 0, deleted: 0, unchanged: 0 };
      for (const op of catalog.operations.values()) {
        const row = {
          key: op.key,
          display_name: op.displayName,
          action_type: op.actionType,
          resource_type: op.resourceType,
          sensitivity: op.sensitivity,
          policy_id: op.policyId,
          policy_version_id: catalog.policies.get(op.policyId)!.versionId,
          mode: op.mode,
          environments: op.environments ? JSON.stringify([...op.environments]) : null,
          source_file: op.file,
        };
        const old = existing.get(op.key);
        if (old && (Object.keys(row) as (keyof typeof row)[]).every((k) => (old[k] ?? null) === (row[k] ?? null))) {
          counts.unchanged++;
          continue;
        }
        await trx('operations')
          .insert({ ...row, config_version_id: catalog.versionId, updated_at: nowMs })
          .onConflict('key')
          .merge();
        counts[old ? 'updated' : 'inserted']++;
      }
      const gone = [...existing.keys()].filter((k) => !catalog.operations.has(k));
      if (gone.length) await trx('operations').whereIn('key', gone).delete();
      counts.deleted = gone.length;
      return counts;
    });
  }

  list(): Promise<OperationRow[]> {
    return this.knex<OperationRow>('operations').select().orderBy('key');
  }
}
