// knex seed: the operation catalogue and the current policy versions, from operations/ and rules/
// (TPS_CONFIG_DIR), upserted into the store. Rerunning it changes nothing unless the YAML changed.
// Run by `npm run seed` / `tps seed` (src/cli/commands/seed.ts).
import type { Knex } from 'knex';
import { readSettings } from '../src/config/env.js';
import { loadCatalog } from '../src/policy/catalog.js';
import { OperationStore } from '../src/store/operationStore.js';
import { PolicyVersionStore } from '../src/store/policyVersionStore.js';

export interface CatalogSeedOptions {
  configDir?: string;
  log?: (line: string) => void;
}

export async function run(knex: Knex, options: CatalogSeedOptions = {}) {
  const catalog = loadCatalog(options.configDir ?? readSettings().configDir);
  await new PolicyVersionStore(knex).remember(catalog.policies.values());
  const counts = await new OperationStore(knex).sync(catalog);
  options.log?.(
    `catalog: ${catalog.operations.size} operations (${counts.inserted} new, ${counts.updated} changed, ${counts.deleted} removed, ${counts.unchanged} unchanged), ` +
      `${catalog.policies.size} policy versions; configuration ${catalog.versionId}`,
  );
  return { catalog, counts };
}

export async function seed(knex: Knex): Promise<void> {
  await run(knex);
}
