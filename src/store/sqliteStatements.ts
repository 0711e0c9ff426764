import type sqlite3 from 'sqlite3';

/**
 * Prepared statements on a raw SQLite connection, each compiled once and kept with its
 * connection. The event writers' hot path goes through here rather than knex: knex builds and
 * SQLite compiles every statement anew, which cost more than storing the events themselves.
 */
type Connection = sqlite3.Database;

const caches = new WeakMap<Connection, Map<string, Promise<sqlite3.Statement>>>();
// The same statements once prepared, so that running one needs no turn of the event loop's promises.
const ready = new WeakMap<Connection, Map<string, sqlite3.Statement>>();

/** A statement that failed to compile (say, its table is gone) is not kept: the next call tries again. */
function statement(conn: Connection, sql: string): Promise<sqlite3.Statement> {
  let cache = caches.get(conn);
  if (!cache) caches.set(conn, (cache = new Map()));
  let stmt = cache.get(sql);
  if (!stmt) {
    stmt = new Promise((resolve, reject) => {
      const prepared = conn.prepare(sql, (err: Error | null) => {
        if (err) return reject(err);
        let done = ready.get(conn);
        if (!done) ready.set(conn, (done = new Map()));
        done.set(sql, prepared);
        resolve(prepared);
      });
    });
    cache.set(sql, stmt);
    stmt.catch(() => cache.delete(sql));
  }
  return stmt;
}

/** Runs the statement; one already prepared starts before this returns. */
export function run(conn: Connection, sql: string, params: readonly unknown[] = []): Promise<void> {
  const start = (stmt: sqlite3.Statement) =>
    new Promise<void>((resolve, reject) => {
      stmt.run(params, (err: Error | null) => (err ? reject(err) : resolve()));
    });
  const prepared = ready.get(conn)?.get(sql);
  return prepared ? start(prepared) : statement(conn, sql).then(start);
}

export async function all<T>(conn: Connection, sql: string, params: readonly unknown[] = []): Promise<T[]> {
  const stmt = await statement(conn, sql);
  return new Promise((resolve, reject) => {
    stmt.all<T>(params, (err, rows) => (err ? reject(err) : resolve(rows)));
  });
}

/** SQLite will not close a connection with live statements: call before closing it. */
export async function finalizeStatements(conn: Connection): Promise<void> {
  const cache = caches.get(conn);
  if (!cache) return;
  caches.delete(conn);
  ready.delete(conn);
  const prepared = await Promise.allSettled(cache.values());
  await Promise.all(prepared.map((p) => p.status === 'fulfilled' && new Promise<void>((resolve) => p.value.finalize(() => resolve()))));
}
