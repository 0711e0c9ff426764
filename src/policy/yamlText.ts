import fs from 'node:fs';
import yaml from 'js-yaml';
import { notUtf8At, strictUtf8 } from '../lib/utf8.js';
import { aliasProblem } from './aliases.js';
import type { ConfigProblem } from './problems.js';

// How TPS reads a YAML file (configuration, fixtures, a request for `tps explain`): as JSON would
// give it. js-yaml's default schema turns an unquoted 2025-01-31 into a Date, and reads !!binary,
// !!set and the like; an evaluate request over HTTP only ever holds strings there, so a YAML
// request would decide differently from the same request sent as JSON. The core schema has no
// timestamps (a date stays a string); merge keys (`<<: *base`) are kept.
// (js-yaml exports its types as `types`, which @types/js-yaml does not declare.)
const { merge } = (yaml as unknown as { types: { merge: yaml.Type } }).types;
const YAML_SCHEMA = yaml.CORE_SCHEMA.extend({ implicit: [merge] });

/** Parses one YAML document with YAML_SCHEMA; throws js-yaml's YAMLException (with its mark) on a syntax error. */
const loadYaml = (text: string, filename: string): unknown => yaml.load(text, { filename, schema: YAML_SCHEMA });

const notUtf8Message = (byte: number) => `the file is not UTF-8 (byte ${byte}): save it as UTF-8`;

/** A file's text, or the problem (not readable, not UTF-8) that keeps it from having one; `read` sees the bytes or the error. */
function readText(file: string, rel: string, read?: (bytes: Buffer | Error) => void): string | ConfigProblem {
  let bytes: Buffer | Error;
  try {
    bytes = fs.readFileSync(file);
  } catch (err) {
    bytes = err as Error;
  }
  read?.(bytes);
  if (!(bytes instanceof Buffer)) return { file: rel, path: '', message: String(bytes) };
  const text = strictUtf8(bytes);
  if (text !== undefined) return text;
  const at = notUtf8At(bytes);
  return { file: rel, path: '', line: at.line, message: notUtf8Message(at.byte) };
}

/**
 * A YAML document's mapping, or its problem: a syntax error, no document at all (an empty or
 * comment-only file loads as undefined, which a schema whose fields are all optional would accept
 * as a file that declares nothing), a list or a scalar, or aliases that make it something other
 * than a tree of bounded size (aliases.ts).
 */
function parseDocument(text: string, rel: string): { doc: Record<string, unknown> } | { problem: ConfigProblem } {
  let doc: unknown;
  try {
    doc = loadYaml(text, rel);
  } catch (err) {
    const e = err as yaml.YAMLException;
    return { problem: { file: rel, path: '', line: e.mark ? e.mark.line + 1 : undefined, message: e.reason ?? String(err) } };
  }
  const aliased = aliasProblem(doc);
  if (aliased) return { problem: { file: rel, ...aliased } };
  if (doc === undefined || doc === null) return { problem: { file: rel, path: '', message: 'the file is empty' } };
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    return { problem: { file: rel, path: '', message: `the file must be a mapping of fields (key: value), not ${Array.isArray(doc) ? 'a list' : `a ${typeof doc}`}` } };
  }
  return { doc: doc as Record<string, unknown> };
}

/** A YAML file as read: its text (unless it has none) and its mapping, or the problem that stopped it. */
export type YamlFile = { text: string; doc: Record<string, unknown> } | { text?: string; problem: ConfigProblem };

/**
 * Reads a YAML file (`rel`: its name in problems) as every YAML file TPS reads is read: UTF-8,
 * YAML_SCHEMA, aliases that keep it a bounded tree, a mapping. `read` sees its bytes as they were
 * read, or the error that kept them from being read (the configuration's digest).
 */
export function readYamlFile(file: string, rel: string, read?: (bytes: Buffer | Error) => void): YamlFile {
  const text = readText(file, rel, read);
  return typeof text === 'string' ? { text, ...parseDocument(text, rel) } : { problem: text };
}
