import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory, { type Knex } from 'knex';

export interface StoreCount {
  total: number;
  /** Evaluate events by decision. */
  byDecision: Record<string, number>;
  /** Step-up retries that found no challenge: the mix keeps them paired, so this should be 0. */
  invalidChallenges: number;
}

export interface BenchStore {
  url: string;
  /** Counted in the store with SQL after the server has stopped: work that was not saved is not counted. */
  count(): Promise<StoreCount>;
  drop(): Promise<void>;
}

async function countIn(db: Knex, table: string): Promise<StoreCount> {
  const total = Number((await db(table).count<{ n: number | string }[]>({ n: '*' }).first())?.n ?? 0);
  const rows = await db(table).where({ source: 'evaluate' }).select('decision').count<{ decision: string; n: number | string }[]>({ n: '*' }).groupBy('decision');
  const invalid = await db(table).where('reasons', 'like', '%challenge_invalid%').count<{ n: number | string }[]>({ n: '*' }).first();
  return { total, byDecision: Object.fromEntries(rows.map((r) => [r.decision, Number(r.n)])), invalidChallenges: Number(invalid?.n ?? 0) };
}

/** A store of the run's own: a temp SQLite file, or a PostgreSQL schema that must not exist yet. */
export async function prepareStore(databaseUrl: string | undefined): Promise<BenchStore> {
  if (databaseUrl && /^postgres(ql)?:\/\//.test(databaseUrl)) {
    const parsed = new URL(databaseUrl);
    const schema = parsed.searchParams.get('schema') ?? `tps_bench_${crypto.randomBytes(4).toString('hex')}`;
    parsed.searchParams.delete('schema');
    const admin = knexFactory({ client: 'pg', connection: parsed.toString(), pool: { min: 0, max: 1 } });
    const exists = await admin('information_schema.schemata').where({ schema_name: schema }).first();
    if (exists) {
      await admin.destroy();
      throw new Error(`schema "${schema}" already exists; the benchmark drops its schema afterwards, so it only uses a new one (DROP SCHEMA ${schema} CASCADE, or name another)`);
    }
    parsed.searchParams.set('schema', schema);
    return {
      url: parsed.toString(),
      count: () => countIn(admin, `${schema}.events`),
      async drop() {
        await admin.raw('DROP SCHEMA IF EXISTS ?? CASCADE', [schema]);
        await admin.destroy();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-'));
  const file = path.join(dir, 'tps.sqlite');
  return {
    url: `sqlite:${file}`,
    async count() {
      const db = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
      try {
        return await countIn(db, 'events');
      } finally {
        await db.destroy();
      }
    },
    drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
