import fs from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Knex } from 'knex';
import { readSettings } from '../../config/env.js';
import { openDatabase } from '../../store/db.js';
import { envOption, out, UsageError, type Command } from '../command.js';

// seeds/ holds knex seed files (each exports seed(knex)). They are TypeScript ES modules, which
// knex's own file loader cannot import, so they are handed to knex.seed.run through a seedSource of
// our own: knex still runs them in order, and each may also export run(knex, options) for flags.

export const SEEDS_DIR = fileURLToPath(new URL('../../../seeds/', import.meta.url));

interface SeedModule {
  seed(knex: Knex): Promise<void>;
  run?(knex: Knex, options: Record<string, unknown>): Promise<unknown>;
}

export function seedFiles(dir = SEEDS_DIR): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d+_[\w-]+\.(ts|js|mjs)$/.test(f) && !f.endsWith('.d.ts'))
    .sort();
}

/** The seed files whose names contain one of `only` (all when empty), and the names that match none. */
export function seedsNamed(only: string[], dir = SEEDS_DIR): { files: string[]; unmatched: string[] } {
  const all = seedFiles(dir);
  return {
    files: all.filter((f) => only.length === 0 || only.some((o) => f.includes(o))),
    unmatched: only.filter((o) => !all.some((f) => f.includes(o))),
  };
}

/** Runs the seeds seedsNamed picks, passing `options` to their run(). */
export async function runSeeds(knex: Knex, options: Record<string, unknown> = {}, only: string[] = [], dir = SEEDS_DIR): Promise<string[]> {
  const { files } = seedsNamed(only, dir);
  const seedSource = {
    getSeeds: async () => files,
    getSeed: async (file: string): Promise<SeedModule> => {
      const mod = (await import(pathToFileURL(`${dir}/${file}`).href)) as SeedModule;
      return mod.run ? { seed: async (k: Knex) => void (await mod.run!(k, options)) } : mod;
    },
  };
  const [log] = await knex.seed.run({ seedSource } as never);
  return log as string[];
}

const seed: Command = {
  words: ['seed'],
  usage: 'seed [--only catalog|demo] [--events N] [--env NAME]',
  summary: 'run seeds/: upsert the operation catalogue and policy versions; add a demo history',
  options: { only: { type: 'string', multiple: true }, events: { type: 'string' }, env: { type: 'string' } },
  async run({ values }) {
    const settings = readSettings();
    const count = values.events === undefined ? undefined : Number(values.events);
    if (count !== undefined && (!Number.isInteger(count) || count < 1)) throw new UsageError('--events N must be a positive integer');
    const environment = envOption(values.env);
    const only = (values.only as string[] | undefined) ?? [];
    // A misspelt --only would otherwise seed nothing and still exit 0.
    const { unmatched } = seedsNamed(only);
    if (unmatched.length) throw new UsageError(`--only ${unmatched.join(', ')} matches no seed file (${seedFiles().join(', ')})`);
    const db = await openDatabase(settings.databaseUrl);
    try {
      const ran = await runSeeds(db.knex, { count, environment, log: out }, only);
      if (ran.length === 0) out('no seed file matched');
      out(`seeded ${db.describe} with ${ran.join(', ') || 'nothing'}`);
    } finally {
      await db.close();
    }
    return 0;
  },
};

export default [seed];
