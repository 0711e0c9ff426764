import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import knexFactory from 'knex';
import { runScript } from '../helpers/script.js';

// The workers' events committed by the primary (src/cluster/eventCommits.ts), over a real
// node:cluster's channel and a real SQLite file: commitsCluster.ts runs as the primary and both workers.

test('workers whose own writer refuses events store them all through the primary, with its refusals and stored rows handed back', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-commits-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'tps.sqlite');
  const { code, stderr } = await runScript('test/cluster/commitsCluster.ts', { COMMITS_DB: file });
  t.is(code, 0, stderr);
  const db = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
  try {
    // Per worker: twenty batches of five, and one ingested event.
    const row = await db('events').count<{ n: number }[]>({ n: '*' }).first();
    t.is(Number(row?.n), 2 * (20 * 5 + 1));
  } finally {
    await db.destroy();
  }
});
