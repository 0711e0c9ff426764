// PostgreSQL's SQLSTATE classes a row's values can cause: data exceptions (a NUL or a lone
// surrogate in jsonb, a number out of range), integrity constraints (a taken key), program limits
// (an index row too large).
const PG_ROW_CLASSES = new Set(['22', '23', '54']);
// SQLite's (node-sqlite3 names the primary result code): a taken key, a value too large or of the wrong type.
const SQLITE_ROW_CODES = new Set(['SQLITE_CONSTRAINT', 'SQLITE_TOOBIG', 'SQLITE_MISMATCH']);

/**
 * Whether a failed write may have failed for one of its rows rather than for the store (down,
 * unreachable, locked, full): only then is a batch worth committing again row by row.
 */
export function isRowFault(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  return SQLITE_ROW_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && PG_ROW_CLASSES.has(code.slice(0, 2)));
}

/**
 * Whether a failed commit surely wrote nothing: the store answered with an error (SQLite's
 * statement rolled back; a PostgreSQL error aborts its transaction), or nothing was ever sent.
 * False where the commit went silent part-way (a dropped connection, a primary that went away with
 * the batch): it may have been committed, so what depends on it not having been must not be undone.
 */
export function surelyNotCommitted(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown; uncertain?: unknown } | undefined;
  if (typeof e?.uncertain === 'boolean') return !e.uncertain;
  if (e?.name === 'KnexTimeoutError' || e?.code === 'ECONNREFUSED') return true;
  const code = e?.code;
  if (typeof code !== 'string') return false;
  // Class 08 is the connection's own failure, not an answer to the statement.
  return code.startsWith('SQLITE_') || (/^[0-9A-Z]{5}$/.test(code) && !code.startsWith('08'));
}
