// Applies an allow_redacted decision's redaction to data before it leaves the server.
// Field paths are dotted (customer.email); arrays met on the way are walked element by element,
// so `customers.email` also covers a list; `*` matches every key. An unknown strategy drops,
// because dropping is the most protective reading.

import type { Redaction } from '../api/types.js';

export interface RedactOptions {
  /**
   * Where `data` sits in the redaction's field namespace. With fields like `customer.email` and
   * data that *is* the customer record, pass `base: 'customer'`. Fields outside base are ignored.
   */
  base?: string;
  /** Replacement for masked values, or a function computing it. Default `***`. */
  mask?: string | number | boolean | null | ((value: unknown, field: string) => unknown);
}

type Node = Record<string, unknown> | unknown[];

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null;

function relativeSegments(field: string, base: string | undefined): string[] | undefined {
  if (!base) return field.split('.');
  if (field === base) return ['*'];
  return field.startsWith(`${base}.`) ? field.slice(base.length + 1).split('.') : undefined;
}

function walk(node: Node, segments: string[], i: number, apply: (holder: Node, key: string) => void): void {
  const segment = segments[i]!;
  if (Array.isArray(node) && !/^\d+$/.test(segment) && segment !== '*') {
    for (const item of node) if (isNode(item)) walk(item, segments, i, apply);
    return;
  }
  const keys = segment === '*' ? Object.keys(node) : [segment];
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(node, key)) continue;
    if (i === segments.length - 1) apply(node, key);
    else {
      const child = (node as Record<string, unknown>)[key];
      if (isNode(child)) walk(child, segments, i + 1, apply);
    }
  }
}

/**
 * Returns a redacted copy of `data`'s JSON form; the input is left untouched. The copy is the JSON
 * round trip, what res.json or a Koa body would send: a class instance or ORM model is redacted as
 * its toJSON() output, where a structured clone would keep neither toJSON nor getters.
 */
export function applyRedaction<T>(data: T, redaction: Redaction | undefined, options: RedactOptions = {}): T {
  if (!redaction || !isNode(data)) return data;
  const text = JSON.stringify(data);
  // A toJSON that answers undefined sends nothing.
  if (text === undefined) return undefined as T;
  const copy = JSON.parse(text) as T & Node;
  if (!isNode(copy)) return copy;
  const drop = redaction.strategy !== 'mask';
  const mask = options.mask ?? '***';
  for (const field of redaction.fields ?? []) {
    const segments = relativeSegments(field, options.base);
    if (!segments || segments.some((s) => s === '')) continue;
    walk(copy, segments, 0, (holder, key) => {
      const target = holder as Record<string, unknown>;
      if (drop) {
        if (Array.isArray(holder)) target[key] = undefined;
        else delete target[key];
      } else {
        target[key] = typeof mask === 'function' ? (mask as (v: unknown, p: string) => unknown)(target[key], field) : mask;
      }
    });
  }
  return copy;
}
