import type { Knex } from 'knex';
import { dialectOf } from './dialect.js';

/**
 * The reason filter's index. An event has several reasons, so no plain column index serves "has
 * reason X". Each (environment, reason) becomes a 32-bit key, a hash, and event_reasons holds one
 * row (key, facet, seq) per key of an event: its primary key reads a reason's events of one facet
 * (facets.ts) in seq order. A hash collision is harmless: every query also checks the event's
 * environment and that its stored reasons really hold the code.
 */
export function reasonKey(environment: string, reason: string): number {
  return hash32(`${environment}\u0000${reason}`);
}

/** An event's reason keys, each once (two reasons may share a key). */
export function reasonKeys(environment: string, reasons: readonly string[]): number[] {
  return [...new Set(reasons.map((reason) => reasonKey(environment, reason)))];
}

/** The event_reasons rows of one event. */
export function reasonRows(environment: string, seq: number, facet: number, reasons: readonly string[]): { key: number; facet: number; seq: number }[] {
  return reasonKeys(environment, reasons).map((key) => ({ key, facet, seq }));
}

/**
 * Restricts a query over `events as e` to events with this reason: a probe of the reason index by
 * its whole key, then the stored JSON text, which holds the code as `"code"` (codes are validated
 * to letters, digits and _ . : -, so they need no escaping) and so rules out a hash collision.
 */
export function withReason(q: Knex.QueryBuilder, environment: string, reason: string): Knex.QueryBuilder {
  const key = reasonKey(environment, reason);
  q.whereRaw('EXISTS (SELECT 1 FROM event_reasons r WHERE r.key = ? AND r.facet = e.facet AND r.seq = e.seq)', [key]);
  return hasReason(q, reason, 'e.');
}

/** The stored reasons (JSON text) hold the code. */
export function hasReason(q: Knex.QueryBuilder, reason: string, prefix = ''): Knex.QueryBuilder {
  const find = dialectOf(q) === 'postgres' ? 'strpos' : 'instr';
  return q.whereRaw(`${find}(${prefix}reasons, ?) > 0`, [JSON.stringify(reason)]);
}

/** A stable signed 32-bit FNV-1a hash of a string. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}
