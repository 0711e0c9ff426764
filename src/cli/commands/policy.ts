import { compileCatalog, type Catalog } from '../../policy/catalog.js';
import { loadConfigDir, loadConfigDirOrProblem } from '../../policy/load.js';
import { ConfigError, formatProblem } from '../../policy/problems.js';
import { err, out, UsageError, type Command } from '../command.js';

/**
 * The configuration folder: the positional DIR, else TPS_CONFIG_DIR, else the working directory
 * (empty counts as unset, as in readSettings). Read alone, not through readSettings, which checks
 * every server variable: a shell's PORT or LOG_LEVEL must not stop `tps validate`.
 */
export const configDirOf = (positional?: string): string => positional ?? (process.env.TPS_CONFIG_DIR || '.');

/** Loads and compiles exactly as the server does (loadConfigDir + compileCatalog), or throws every problem. */
export function loadWorkingTree(dir: string): Catalog {
  const { catalog, problems } = compileCatalog(loadConfigDir(dir));
  if (!catalog) throw new ConfigError(problems);
  return catalog;
}

const validate: Command = {
  words: ['validate'],
  usage: 'validate [DIR] [--json]',
  positionals: ['DIR'],
  summary: 'load and compile operations/ and rules/ as the server does; list every problem',
  options: { json: { type: 'boolean' } },
  async run({ values, positionals }) {
    const dir = configDirOf(positionals[0]);
    // Problems, never a throw: --json always prints JSON for its consumer to parse.
    const { catalog, problems } = compileCatalog(loadConfigDirOrProblem(dir));
    if (values.json) {
      out(JSON.stringify(catalog ? { ok: true, versionId: catalog.versionId, problems: [] } : { ok: false, problems }, null, 2));
      return catalog ? 0 : 1;
    }
    if (!catalog) {
      err(`${problems.length} problem${problems.length === 1 ? '' : 's'}:`);
      for (const p of problems) err(formatProblem(p));
      return 1;
    }
    out(`ok: ${catalog.operations.size} operation${catalog.operations.size === 1 ? '' : 's'}, ${catalog.policies.size} polic${catalog.policies.size === 1 ? 'y' : 'ies'}; configuration version ${catalog.versionId}`);
    for (const p of catalog.policies.values()) out(`  ${p.id.padEnd(24)} ${p.versionId}${p.mode === 'monitor' ? '  (monitor)' : ''}`);
    return 0;
  },
};

const compile: Command = {
  words: ['compile'],
  usage: 'compile [DIR] [--operation KEY]',
  positionals: ['DIR'],
  summary: 'print the compiled json-rules-engine rule sets and their policyVersionIds',
  options: { operation: { type: 'string' } },
  async run({ values, positionals }) {
    const catalog = loadWorkingTree(configDirOf(positionals[0]));
    const key = values.operation as string | undefined;
    let policies = [...catalog.policies.values()];
    let operations = [...catalog.operations.values()];
    if (key) {
      const op = catalog.operations.get(key);
      if (!op) throw new UsageError(`operation "${key}" is not defined; defined: ${[...catalog.operations.keys()].join(', ')}`);
      operations = [op];
      policies = policies.filter((p) => p.id === op.policyId);
    }
    const doc = {
      configurationVersionId: catalog.versionId,
      operations: operations.map((o) => ({ key: o.key, policyId: o.policyId, mode: o.mode, sensitivity: o.sensitivity, actionType: o.actionType })),
      policies: policies.map((p) => ({ policyId: p.id, policyVersionId: p.versionId, mode: p.mode, compiled: p.compiled })),
    };
    out(JSON.stringify(doc, null, 2));
    return 0;
  },
};

export default [validate, compile];
