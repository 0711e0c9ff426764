import crypto from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { ConfigProblem } from './problems.js';
import { ConfigError } from './problems.js';
import { BUILT_IN_RULE_NAMES, compilePolicy, type CompiledPolicy } from './compile.js';
import { loadConfigDir, locateProblems, type LoadedConfig } from './load.js';
import type { AiSpec, Mode } from './schema.js';

export interface CompiledOperation {
  key: string;
  displayName: string;
  actionType: string;
  resourceType: string;
  sensitivity: string;
  policyId: string;
  environments?: ReadonlySet<string>;
  ai?: AiSpec;
  /** monitor: the service answers allow and records the would-be decision (see CompiledPolicy.mode). */
  mode: Mode;
  file: string;
}

/** Everything a request needs from configuration: immutable, swapped whole on reload. */
export interface Catalog {
  dir: string;
  loadedAt: Date;
  versionId: string;
  operations: ReadonlyMap<string, CompiledOperation>;
  policies: ReadonlyMap<string, CompiledPolicy>;
  /** What it was compiled from: the evaluation thread compiles the very same (src/evaluate/thread.ts). */
  source: LoadedConfig;
}

export function lookupOperation(catalog: Catalog, environment: string, key: string): CompiledOperation | undefined {
  const op = catalog.operations.get(key);
  if (!op || (op.environments && !op.environments.has(environment))) return undefined;
  return op;
}

/**
 * What of an operation its answers and events carry: every field but the file it sits in, so that
 * the configuration's version moves with any of them (a resourceType too) and not with a file's move.
 */
const answeredBy = ({ file: _file, environments, ...rest }: CompiledOperation) => ({ ...rest, environments: environments && [...environments] });

const builtIn: ReadonlySet<string> = new Set(BUILT_IN_RULE_NAMES);

/** Cross-file checks and compilation; returns every problem found, not only the first. */
export function compileCatalog(loaded: LoadedConfig): { catalog?: Catalog; problems: ConfigProblem[] } {
  const problems = [...loaded.problems];
  const signals = loaded.signals?.spec ?? {};

  const policies = new Map<string, CompiledPolicy>();
  const policyFiles = new Map<string, string>();
  for (const { file, spec } of loaded.policies) {
    if (policyFiles.has(spec.id)) {
      problems.push({ file, path: 'id', message: `policy id "${spec.id}" is already defined in ${policyFiles.get(spec.id)}` });
      continue;
    }
    policyFiles.set(spec.id, file);
    for (const name of Object.keys(spec.weights ?? {})) {
      if (!Object.hasOwn(signals, name)) problems.push({ file, path: `weights.${name}`, message: `weights.${name} names no signal declared in rules/signals.yaml` });
    }
    const ruleNames = new Set<string>();
    (spec.rules ?? []).forEach((r, i) => {
      // Explanations and fixtures' firedRules name rules: two of one name could not be told apart.
      if (builtIn.has(r.name)) problems.push({ file, path: `rules[${i}].name`, message: `rule name "${r.name}" is a built-in rule's (${BUILT_IN_RULE_NAMES.join(', ')}); choose another` });
      else if (ruleNames.has(r.name)) problems.push({ file, path: `rules[${i}].name`, message: `rule name "${r.name}" is used twice in this policy` });
      ruleNames.add(r.name);
    });
    try {
      policies.set(spec.id, compilePolicy(spec, signals));
    } catch (err) {
      problems.push({ file, path: '', message: `does not compile: ${(err as Error).message}` });
    }
  }

  // A policy file with schema problems still declares its id: operations bound to it are not also
  // reported as bound to nothing. An operation file with schema problems still gets its binding checked.
  const declared = new Set([...policyFiles.keys(), ...loaded.rejected.policies.map((p) => p.spec.id).filter((id) => typeof id === 'string')]);
  for (const { file, spec } of loaded.rejected.operations) {
    if (typeof spec.policy === 'string' && !declared.has(spec.policy)) problems.push({ file, path: 'policy', message: `policy "${spec.policy}" is not defined under rules/` });
  }

  const operations = new Map<string, CompiledOperation>();
  for (const { file, spec } of loaded.operations) {
    const previous = operations.get(spec.key);
    if (previous) {
      problems.push({ file, path: 'key', message: `operation key "${spec.key}" is already defined in ${previous.file}` });
      continue;
    }
    if (!declared.has(spec.policy)) problems.push({ file, path: 'policy', message: `policy "${spec.policy}" is not defined under rules/` });
    operations.set(spec.key, {
      key: spec.key,
      displayName: spec.displayName,
      actionType: spec.actionType,
      resourceType: spec.resourceType,
      sensitivity: spec.sensitivity,
      policyId: spec.policy,
      environments: spec.environments ? new Set(spec.environments) : undefined,
      ai: spec.ai,
      mode: (spec.mode ?? 'enforce') as Mode,
      file,
    });
  }
  if (loaded.operations.length === 0 && problems.length === 0) problems.push({ file: 'operations', path: '', message: 'no protected operation is defined' });
  if (problems.length) return { problems: locateProblems(problems, loaded.texts) };

  const versionId = crypto
    .createHash('sha256')
    .update(stringify([...operations.values()].map(answeredBy)) ?? '')
    .update([...policies.values()].map((p) => p.versionId).join('\n'))
    .digest('hex')
    .slice(0, 16);
  return { catalog: { dir: loaded.dir, loadedAt: new Date(), versionId, operations, policies, source: loaded }, problems };
}

/** Loads and compiles a configuration folder, or throws ConfigError listing every problem. */
export function loadCatalog(dir: string): Catalog {
  return compiledCatalog(loadConfigDir(dir));
}

/** compileCatalog, or ConfigError listing every problem. */
export function compiledCatalog(loaded: LoadedConfig): Catalog {
  const { catalog, problems } = compileCatalog(loaded);
  if (!catalog) throw new ConfigError(problems);
  return catalog;
}
