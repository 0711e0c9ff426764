import type { Knex } from 'knex';
import { stringify } from 'safe-stable-stringify';
import type { CompiledPolicy } from '../policy/compile.js';

export interface PolicyVersionRecord {
  versionId: string;
  policyId: string;
  compiled: Record<string, unknown>;
  createdAt: number;
}

/** Every compiled policy version that was ever loaded, so an old event's exact policy can be shown. */
export class PolicyVersionStore {
  constructor(private readonly knex: Knex) {}

  async remember(policies: Iterable<CompiledPolicy>): Promise<void> {
    const rows = [...policies].map((p) => ({ version_id: p.versionId, policy_id: p.id, compiled: stringify(p.compiled), created_at: Date.now() }));
    if (rows.length) await this.knex('policy_versions').insert(rows).onConflict('version_id').ignore();
  }

  async get(versionId: string): Promise<PolicyVersionRecord | undefined> {
    const row = await this.knex('policy_versions').where({ version_id: versionId }).first();
    if (!row) return undefined;
    return { versionId: row.version_id, policyId: row.policy_id, compiled: JSON.parse(row.compiled), createdAt: Number(row.created_at) };
  }
}
