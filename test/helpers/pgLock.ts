import type { ExecutionContext } from 'ava';
import knexFactory from 'knex';
import { PG_BASE_URL } from './tps.js';

/** A PostgreSQL table a test holds (ACCESS EXCLUSIVE, in a transaction of its own) to stop another process at it. */
export interface HeldTable {
  /** Resolves once another session waits for the table; rejects if `ended` settles first. */
  waitedFor(ended: Promise<unknown>): Promise<void>;
  release(): Promise<void>;
}

/** Holds `table` ("schema.table") until released, or until the test ends. */
export async function holdTable(t: ExecutionContext, table: string): Promise<HeldTable> {
  const admin = knexFactory({ client: 'pg', connection: PG_BASE_URL, pool: { min: 0, max: 2 } });
  const trx = await admin.transaction();
  t.teardown(async () => {
    if (!trx.isCompleted()) await trx.rollback();
    await admin.destroy();
  });
  await trx.raw('LOCK TABLE ?? IN ACCESS EXCLUSIVE MODE', [table]);
  return {
    async waitedFor(ended) {
      let over = false;
      void ended.then(() => (over = true));
      while (!over) {
        const { rows } = await admin.raw('SELECT count(*)::int AS n FROM pg_locks WHERE relation = to_regclass(?) AND NOT granted', [table]);
        if (rows[0].n > 0) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`the process ended before it waited for ${table}`);
    },
    release: async () => void (await trx.commit()),
  };
}
