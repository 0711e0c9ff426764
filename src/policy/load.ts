import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { check, yup } from '../validate/kit.js';
import { locator, splitPath } from './locate.js';
import { didYouMean } from '../lib/suggest.js';
import type { ConfigProblem } from './problems.js';
import { operationSchema, policySchema, signalsFileSchema, type OperationSpec, type PolicySpec, type SignalSpec } from './schema.js';
import { readYamlFile } from './yamlText.js';

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
  /** Each file's text, by the name problems use, so a problem can be located once found. */
  texts: Map<string, string>;
  /**
   * Files that parsed but failed their schema, kept raw so cross-file checks (a policy that does
   * not exist) still run on them: validate lists every problem, not those of valid files only.
   */
  rejected: { operations: Sourced<Record<string, unknown>>[]; policies: Sourced<Record<string, unknown>>[] };
  /** A hash of every file's name and bytes as read (configDigest's), to tell whether they changed since. */
  digest: string;
}

export const SIGNALS_FILE = 'signals.yaml';
/**
 * A hidden name is never configuration: an editor's lock file (Emacs's dangling `.#payments.yaml`
 * symlink) or a macOS `._payments.yaml` would otherwise stop start-up and every reload.
 */
const isHidden = (f: string) => f.startsWith('.');
/** A YAML file that is neither hidden nor a fixture file: one the server loads (and a change to it reloads). */
export const isConfigFile = (f: string) => /\.ya?ml$/.test(f) && !isHidden(f) && !isFixtureFile(f);
export const isFixtureFile = (f: string) => /\.fixtures\.ya?ml$/.test(f) && !isHidden(f);

/** A folder's configuration files (its YAML files but fixtures), in the order they load, from its names. */
const configFilesOf = (dir: string, names: string[]): string[] =>
  names
    .filter(isConfigFile)
    .sort()
    .map((f) => path.join(dir, f));

const listYaml = (dir: string): string[] => (fs.existsSync(dir) ? configFilesOf(dir, fs.readdirSync(dir)) : []);

type Rejected = Sourced<Record<string, unknown>>[];

/** The configuration's folders, in the order loadConfigDir reads them (configDigest and watch.ts follow it). */
export const CONFIG_FOLDERS: readonly string[] = ['operations', 'rules'];

/** A file's part of the digest: its name and its bytes, or the error that kept it from being read. */
function digestBytes(file: string, bytes: Buffer | Error, digest: crypto.Hash): void {
  if (bytes instanceof Buffer) digest.update(`${file}\0${bytes.length}\0`).update(bytes).update('\0');
  else digest.update(`${file}\0!${(bytes as NodeJS.ErrnoException).code}\0`);
}

/**
 * The digest of the configuration's files as they are now: it differs from a LoadedConfig's when a
 * file was written, added or removed since that was read (hot reload waits until they settle). Read
 * without holding the thread: hot reload asks it on the HTTP thread while a file is being written.
 */
export async function configDigest(dir: string): Promise<string> {
  // The files loadConfigDir reads, in its order.
  const list = async (sub: string) => configFilesOf(path.join(dir, sub), await fs.promises.readdir(path.join(dir, sub)).catch(() => []));
  const digest = crypto.createHash('sha256');
  for (const sub of CONFIG_FOLDERS) for (const file of await list(sub)) digestBytes(file, await fs.promises.readFile(file).catch((err: Error) => err), digest);
  return digest.digest('hex');
}

function parse<T>(
  file: string,
  rel: string,
  schema: Parameters<typeof check<T>>[0],
  problems: ConfigProblem[],
  texts: Map<string, string>,
  digest: crypto.Hash,
  rejected?: Rejected,
): T | undefined {
  const read = readYamlFile(file, rel, (bytes) => digestBytes(file, bytes, digest));
  if (read.text !== undefined) texts.set(rel, read.text);
  if ('problem' in read) {
    problems.push(read.problem);
    return undefined;
  }
  const { doc } = read;
  let result: ReturnType<typeof check<T>>;
  try {
    result = check<T>(schema, doc);
  } catch (err) {
    // Not expected once readYamlFile has refused cycles and fan-outs; still this file's problem, not a crash without a file.
    problems.push({ file: rel, path: '', message: `cannot be checked: ${(err as Error).message}` });
    return undefined;
  }
  if (result.ok) return result.value;
  for (const d of result.details) {
    const path = d.path === '(root)' ? '' : d.path;
    problems.push({ file: rel, path, message: withSuggestion(schema as yup.Schema, doc, path, d.message) });
  }
  rejected?.push({ file: rel, spec: doc });
  return undefined;
}

export function loadConfigDir(dir: string): LoadedConfig {
  const problems: ConfigProblem[] = [];
  const texts = new Map<string, string>();
  const rejected: LoadedConfig['rejected'] = { operations: [], policies: [] };
  const digest = crypto.createHash('sha256');
  // Relative to the working directory when under it (as the server logs it), else absolute.
  const rel = (f: string) => {
    const r = path.relative(process.cwd(), f);
    return !r ? f : r.startsWith('..') || path.isAbsolute(r) ? path.resolve(f) : r;
  };
  const opsDir = path.join(dir, 'operations');
  const rulesDir = path.join(dir, 'rules');
  if (!fs.existsSync(opsDir)) problems.push({ file: rel(opsDir), path: '', message: 'folder not found' });
  if (!fs.existsSync(rulesDir)) problems.push({ file: rel(rulesDir), path: '', message: 'folder not found' });

  const operations: Sourced<OperationSpec>[] = [];
  for (const file of listYaml(opsDir)) {
    const spec = parse<OperationSpec>(file, rel(file), operationSchema as never, problems, texts, digest, rejected.operations);
    if (spec) operations.push({ file: rel(file), spec });
  }

  let signals: LoadedConfig['signals'];
  const policies: Sourced<PolicySpec>[] = [];
  for (const file of listYaml(rulesDir)) {
    if (path.basename(file) === SIGNALS_FILE) {
      const spec = parse<{ signals: Record<string, SignalSpec> }>(file, rel(file), signalsFileSchema as never, problems, texts, digest);
      if (spec) signals = { file: rel(file), spec: spec.signals };
      continue;
    }
    const spec = parse<PolicySpec>(file, rel(file), policySchema as never, problems, texts, digest, rejected.policies);
    if (spec) policies.push({ file: rel(file), spec });
  }
  if (fs.existsSync(rulesDir) && !fs.existsSync(path.join(rulesDir, SIGNALS_FILE))) {
    problems.push({ file: rel(path.join(rulesDir, SIGNALS_FILE)), path: '', message: 'file not found: risk signals are declared here' });
  }
  return { dir, operations, signals, policies, problems, texts, rejected, digest: digest.digest('hex') };
}

/**
 * loadConfigDir(dir), with an error it throws (a folder that cannot be listed) as the load's one
 * problem (after `prefix`), for a caller that reports problems rather than errors: `validate --json`
 * prints its JSON whatever went wrong, and a hot reload is refused through ConfigHolder.reload,
 * whose problems /readyz shows. `digest` stands for the files such a load could not read.
 */
export function loadConfigDirOrProblem(dir: string, { prefix = '', digest = '' } = {}): LoadedConfig {
  try {
    return loadConfigDir(dir);
  } catch (err) {
    const problems = [{ file: dir, path: '', message: `${prefix}${(err as Error).message}` }];
    return { dir, operations: [], signals: undefined, policies: [], problems, texts: new Map(), rejected: { operations: [], policies: [] }, digest };
  }
}

/**
 * Gives each problem that has none the line of its YAML path (see locate.ts), and orders them file
 * by file (in the order files were first named), by line within a file.
 */
export function locateProblems(problems: ConfigProblem[], texts: ReadonlyMap<string, string>): ConfigProblem[] {
  const locators = new Map<string, ReturnType<typeof locator>>();
  const located = problems.map((p) => {
    if (p.line !== undefined) return p;
    const text = texts.get(p.file);
    if (text === undefined) return p;
    let loc = locators.get(p.file);
    if (!loc) locators.set(p.file, (loc = locator(text)));
    return { ...p, line: loc.line(p.path) };
  });
  const fileOrder = new Map<string, number>();
  for (const p of located) if (!fileOrder.has(p.file)) fileOrder.set(p.file, fileOrder.size);
  // Array.prototype.sort is stable: problems on one line keep the order they were found in.
  return located.sort((a, b) => fileOrder.get(a.file)! - fileOrder.get(b.file)! || (a.line ?? 0) - (b.line ?? 0));
}

/** A typo is the usual cause of an unknown field, so name the field that was probably meant. */
export function withSuggestion(schema: yup.Schema, doc: unknown, path: string, message: string): string {
  if (!message.endsWith(' is not a known field')) return message;
  const parts = splitPath(path);
  const typo = String(parts.pop());
  return message + didYouMean(typo, knownFields(schema, doc, parts));
}

function knownFields(schema: yup.Schema, doc: unknown, parts: (string | number)[]): string[] {
  try {
    let value: unknown = doc;
    for (const p of parts) value = (value as Record<string | number, unknown>)?.[p];
    const parent = parts.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('').replace(/^\./, '');
    let node = yup.reach(schema, parent, doc) as unknown as { fields?: object; resolve?: (o: object) => unknown };
    if (typeof node.resolve === 'function' && !node.fields) node = node.resolve({ value }) as typeof node;
    return Object.keys(node.fields ?? {});
  } catch {
    return [];
  }
}
