import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import knexFactory from 'knex';
import { workersCommits } from '../../src/cluster/eventCommits.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { sqliteEventWriter, type EventInsert } from '../../src/store/eventWriteTx.js';
import { generateEvents } from '../events/helpers.js';
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
    // Per worker: twenty batches of five, the five sent beside the refused batch, the two grouped with a refused event, and one ingested event.
    const row = await db('events').count<{ n: number }[]>({ n: '*' }).first();
    t.is(Number(row?.n), 2 * (20 * 5 + 5 + 2 + 1));
  } finally {
    await db.destroy();
  }
});

// The primary's grouping itself, on a real SQLite writer: two batches that reach it in one turn
// share a transaction, and the one another worker sent is not failed by the one refused beside it.
test('a batch committed in a group with a refused one is stored, and only the refused one fails', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-commits-'));
  const db = await openDatabase(`sqlite:${path.join(dir, 'tps.sqlite')}`);
  t.teardown(async () => {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // The workers' rows, as their stores prepare them (facets resolved), captured instead of committed.
  const prepared: (readonly EventInsert[])[] = [];
  const capture = new KnexEventStore(db, { commits: (local) => ({ transaction: (work) => local.transaction(work), insertAlone: async (rows) => void prepared.push(rows), insertNew: (rows) => local.insertNew(rows) }) });
  const [stored, fresh] = [generateEvents('grouped-a', 3, Date.now()) as EventRecord[], generateEvents('grouped-b', 3, Date.now()) as EventRecord[]];
  for (const batch of [stored, [stored[0]!], fresh]) await capture.insertBatch(batch);
  const [storedRows, takenRows, freshRows] = prepared as [readonly EventInsert[], readonly EventInsert[], readonly EventInsert[]];

  // The real writer, with each transaction it is asked for counted.
  const writer = sqliteEventWriter(db.knex);
  let attempts = 0;
  const commits = workersCommits({ ...writer, insertAlone: (rows) => (attempts++, writer.insertAlone(rows)) }, 2);
  await commits.insertAlone(storedRows);
  // In one turn: a group of the two (maxBatch = two workers), then each alone.
  attempts = 0;
  const [refused, beside] = await Promise.allSettled([commits.insertAlone(takenRows), commits.insertAlone(freshRows)]);
  t.is(refused.status, 'rejected');
  t.regex(String((refused as PromiseRejectedResult).reason), /unique/i);
  t.is(beside.status, 'fulfilled', String((beside as PromiseRejectedResult).reason));
  t.is(attempts, 3);
  // Refused alone, it fails with the writer's own error, tried once.
  attempts = 0;
  const alone = await commits.insertAlone(takenRows).catch((err: unknown) => err);
  t.regex(String(alone), /unique/i);
  t.is(attempts, 1);
  const events = new KnexEventStore(db);
  t.is(await events.count('grouped-a'), 3);
  t.is(await events.count('grouped-b'), 3);
});
