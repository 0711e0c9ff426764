import type { Knex } from 'knex';
import type sqlite3 from 'sqlite3';

/** What KeptWriter uses of knex's pool (tarn's Pool). */
type Pool = { on(event: string, listener: () => void): void; numPendingAcquires(): number; destroyed: boolean };

/**
 * The evaluate and ingest paths' commits keep the writer's connection from one to the next while
 * nothing else asks the pool for it, so that a batch starts the moment the one before has
 * committed. Taken from the pool each time (timers, a validation and several promise turns), the
 * next batch started only after the answers of the last were written, and the writer sat idle
 * ~0.35 ms of each ~2.2 ms commit at full load (bench/ROUNDS.md, sixteenth round). Any other
 * request for the connection (a transaction, the checkpointer's catch-up, a migration, closing the
 * pool) takes it back at once, and one that waited for a commit gets it right after.
 */
export class KeptWriter {
  private kept: sqlite3.Database | undefined;
  private readonly pool: Pool;

  constructor(private readonly knex: Knex) {
    this.pool = knex.client.pool as Pool;
    this.pool.on('acquireRequest', () => this.giveBack());
    this.pool.on('poolDestroyRequest', () => this.giveBack());
  }

  take(): sqlite3.Database | undefined {
    const conn = this.kept;
    this.kept = undefined;
    return conn;
  }

  /** After a commit: kept, unless a request waits for it or the pool is closing (it waits for every connection back). */
  keep(conn: sqlite3.Database): void {
    if (this.pool.destroyed || this.pool.numPendingAcquires() > 0) this.knex.client.releaseConnection(conn);
    else this.kept = conn;
  }

  private giveBack(): void {
    const conn = this.take();
    if (conn) this.knex.client.releaseConnection(conn);
  }
}

// One per knex: every event store on a database shares its writer.
const keptWriters = new WeakMap<Knex, KeptWriter>();
export function keptWriter(knex: Knex): KeptWriter {
  let kept = keptWriters.get(knex);
  if (!kept) keptWriters.set(knex, (kept = new KeptWriter(knex)));
  return kept;
}
