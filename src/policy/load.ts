import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { check } from '../validate/kit.js';
import type { ConfigProblem } from './problems.js';
import { operationSchema, policySchema, signalsFileSchema, type OperationSpec, type PolicySpec, type SignalSpec } from './schema.js';

export interface Sourced<T> {
  file: string;
  spec: T;
}

/** The configuration folder, parsed and schema-checked file by file; cross-file checks come later. */
export interface LoadedConfig {
  dir: string;
  operations: Sourced<OperationSpec>[];
  signals: Sourced<Record<string, SignalSpec>> | undefined;
  policies: Sourced<PolicySpec>[];
  problems: ConfigProblem[];
}

export const SIGNALS_FILE = 'signals.yaml';
const isYaml = (f: string) => /\.ya?ml$/.test(f);
export const isFixtureFile = (f: string) => /\.fixtures\.ya?ml$/.test(f);

function listYaml(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => isYaml(f) && !isFixtureFile(f))
    .sort()
    .map((f) => path.join(dir, f));
}

function parse<T>(file: string, rel: string, schema: Parameters<typeof check<T>>[0], problems: ConfigProblem[]): T | undefined {
  let doc: unknown;
  try {
    doc = yaml.load(fs.readFileSync(file, 'utf8'), { filename: rel });
  } catch (err) {
    const e = err as yaml.YAMLException;
    problems.push({ file: rel, path: '', line: e.mark ? e.mark.line + 1 : undefined, message: e.reason ?? String(err) });
    return undefined;
  }
  const result = check<T>(schema, doc);
  if (result.ok) return result.value;
  for (const d of result.details) problems.push({ file: rel, path: d.path === '(root)' ? '' : d.path, message: d.message });
  return undefined;
}

export function loadConfigDir(dir: string): LoadedConfig {
  const problems: ConfigProblem[] = [];
  const rel = (f: string) => path.relative(process.cwd(), f) || f;
  const opsDir = path.join(dir, 'operations');
  const rulesDir = path.join(dir, 'rules');
  if (!fs.existsSync(opsDir)) problems.push({ file: rel(opsDir), path: '', message: 'folder not found' });
  if (!fs.existsSync(rulesDir)) problems.push({ file: rel(rulesDir), path: '', message: 'folder not found' });

  const operations: Sourced<OperationSpec>[] = [];
  for (const file of listYaml(opsDir)) {
    const spec = parse<OperationSpec>(file, rel(file), operationSchema as never, problems);
    if (spec) operations.push({ file: rel(file), spec });
  }

  let signals: LoadedConfig['signals'];
  const policies: Sourced<PolicySpec>[] = [];
  for (const file of listYaml(rulesDir)) {
    if (path.basename(file) === SIGNALS_FILE) {
      const spec = parse<{ signals: Record<string, SignalSpec> }>(file, rel(file), signalsFileSchema as never, problems);
      if (spec) signals = { file: rel(file), spec: spec.signals };
      continue;
    }
    const spec = parse<PolicySpec>(file, rel(file), policySchema as never, problems);
    if (spec) policies.push({ file: rel(file), spec });
  }
  if (fs.existsSync(rulesDir) && !fs.existsSync(path.join(rulesDir, SIGNALS_FILE))) {
    problems.push({ file: rel(path.join(rulesDir, SIGNALS_FILE)), path: '', message: 'file not found: risk signals are declared here' });
  }
  return { dir, operations, signals, policies, problems };
}
