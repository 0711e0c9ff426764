import type sqlite3 from 'sqlite3';

/**
 * Prepared statements on a raw SQLite connection, each compiled once and kept with its
 * connection. The event writers' hot path goes through here rather than knex: knex builds and
 * SQLite compiles every statement anew, which cost more than storing the events themselves.
 */
type Connection = sqlite3.Database;

// Per connection, each statement: its preparation while under way, then the statement itself, so
// that running one already prepared takes no turn of the event loop's promises.
const caches = new WeakMap<Connection, Map<string, sqlite3.Statement | Promise<sqlite3.Statement>>>();

/** A statement that failed to compile (say, its table is gone) is not kept: the next call tries again. */
function statement(conn: Connection, sql: string): sqlite3.Statement | Promise<sqlite3.Statement> {
  let cache = caches.get(conn);
  if (!cache) caches.set(conn, (cache = new Map()));
  const known = cache.get(sql);
  if (known) return known;
  const preparing = new Promise<sqlite3.Statement>((resolve, reject) => {
    const prepared = conn.prepare(sql, (err: Error | null) => {
      if (err) {
        cache.delete(sql);
        return reject(err);
      }
      cache.set(sql, prepared);
      resolve(prepared);
    });
  });
  cache.set(sql, preparing);
  return preparing;
}

/** Uses the statement; one already prepared is used before this returns. */
function withStatement<T>(conn: Connection, sql: string, use: (stmt: sqlite3.Statement) => Promise<T>): Promise<T> {
  const stmt = statement(conn, sql);
  return stmt instanceof Promise ? stmt.then(use) : use(stmt);
}

export function run(conn: Connection, sql: string, params: readonly unknown[] = []): Promise<void> {
  return withStatement(conn, sql, (stmt) => new Promise((resolve, reject) => stmt.run(params, (err: Error | null) => (err ? reject(err) : resolve()))));
}

export function all<T>(conn: Connection, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  return withStatement(conn, sql, (stmt) => new Promise((resolve, reject) => stmt.all<T>(params, (err, rows) => (err ? reject(err) : resolve(rows)))));
}

/** SQLite will not close a connection with live statements: call before closing it. */
export async function finalizeStatements(conn: Connection): Promise<void> {
  const cache = caches.get(conn);
  if (!cache) return;
  caches.delete(conn);
  const prepared = await Promise.allSettled(cache.values());
  await Promise.all(prepared.map((p) => p.status === 'fulfilled' && new Promise<void>((resolve) => p.value.finalize(() => resolve()))));
}
