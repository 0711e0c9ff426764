import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionContext } from 'ava';
import knexFactory from 'knex';
import { freshDatabase, PG_BASE_URL } from './tps.js';

/**
 * DATABASE_URLs that name no store, each beside the way TPS names it in an error (no user or
 * password): a misspelt SQLite path in a folder of the test's own, and a PostgreSQL schema never
 * made. `untouched` checks that nothing created the file's folder or the schema.
 */
export function noStores(t: ExecutionContext): { urls: (readonly [url: string, named: string])[]; untouched(): Promise<void> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-nostore-'));
  const pg = freshDatabase('postgres');
  t.teardown(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await pg.drop();
  });
  const typo = path.join(dir, 'dta', 'tps.sqlite');
  const schema = new URL(pg.url).searchParams.get('schema')!;
  return {
    urls: [
      [`sqlite:${typo}`, `sqlite:${typo} (no such file)`],
      [pg.url, `postgres://${new URL(PG_BASE_URL).host}${new URL(PG_BASE_URL).pathname}?schema=${schema}`],
    ],
    async untouched() {
      t.deepEqual(fs.readdirSync(dir), [], 'the misspelt path was created');
      const admin = knexFactory({ client: 'pg', connection: PG_BASE_URL, pool: { min: 0, max: 1 } });
      try {
        t.deepEqual(await admin('information_schema.schemata').where('schema_name', schema), [], 'the schema was migrated');
      } finally {
        await admin.destroy();
      }
    },
  };
}
