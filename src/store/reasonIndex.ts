import type { Knex } from 'knex';

/**
 * The reason filter's index. An event has several reasons, so no plain column index serves "has
 * reason X". Each (environment, reason) becomes a 32-bit key, a hash: SQLite keeps the table
 * event_reasons (key, seq), one small row per key of an event, read newest first by its primary
 * key; PostgreSQL keeps the keys in an integer[] column of the event under a GIN index, a few bytes
 * per key. A hash collision is harmless: every query also checks the event's environment and that
 * its stored reasons really hold the code.
 */
export function reasonKey(environment: string, reason: string): number {
  return hash32(`${environment}\u0000${reason}`);
}

/** An event's reason keys (duplicate reasons count once). */
export function reasonKeys(environment: string, reasons: readonly string[]): number[] {
  return [...new Set(reasons)].map((reason) => reasonKey(environment, reason));
}

/** SQLite: the event_reasons rows of one event. */
export function reasonRows(environment: string, seq: number, reasons: readonly string[]): { key: number; seq: number }[] {
  return reasonKeys(environment, reasons).map((key) => ({ key, seq }));
}

/**
 * Restricts a query over `events as e` to events with this reason. The code is also checked in the
 * stored JSON text as `"code"`: codes are validated to letters, digits and _ . : -, so they need no
 * escaping. SQLite: joins event_reasons as `r`; `reasonFirst` makes it the outer loop (the query
 * must then be built from it, see filteredEvents), otherwise events stay the outer loop.
 */
export function withReason(q: Knex.QueryBuilder, environment: string, reason: string, sqlite: 'reasonFirst' | 'eventsFirst'): Knex.QueryBuilder {
  const key = reasonKey(environment, reason);
  const quoted = JSON.stringify(reason);
  if (q.client.config.client === 'pg') return q.whereRaw('e.reason_keys @> ARRAY[?]::integer[]', [key]).whereRaw('strpos(e.reasons, ?) > 0', [quoted]);
  // SQLite reads CROSS JOIN's left side as the outer loop: the join order is ours, not the planner's.
  if (sqlite === 'eventsFirst') q.crossJoin('event_reasons as r' as never, 'r.seq', 'e.seq');
  return q.where('r.key', key).whereRaw('instr(e.reasons, ?) > 0', [quoted]);
}

/** A stable signed 32-bit FNV-1a hash of a string. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}
