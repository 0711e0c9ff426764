import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { committedByPrimary, commitWorkersEvents, PrimaryCommitError } from '../../src/cluster/eventCommits.js';
import { GroupCommitter } from '../../src/record/groupCommit.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { sqliteEventWriter, type EventWriter } from '../../src/store/eventWriteTx.js';
import { generateEvents } from '../events/helpers.js';

/**
 * A real node:cluster for event-commits.test.ts: this file runs as the primary, committing on its
 * SQLite writer (COMMITS_DB, migrated here), and as two workers whose own writer refuses to
 * commit events, so every event they store must go through the primary. A worker exits 1 on any
 * failed check; the primary exits with 1 if either did, 0 otherwise.
 */
const url = `sqlite:${process.env.COMMITS_DB!}`;

if (cluster.isPrimary) {
  const db = await openDatabase(url);
  commitWorkersEvents(sqliteEventWriter(db.knex), 2);
  cluster.setupPrimary({ serialization: 'advanced' });
  for (const name of ['a', 'b']) cluster.fork({ COMMITS_NAME: name });
  let exited = 0;
  let failed = false;
  cluster.on('exit', (_worker, code) => {
    failed ||= code !== 0;
    if (++exited === 2) void db.close().then(() => process.exit(failed ? 1 : 0));
  });
} else {
  const name = process.env.COMMITS_NAME!;
  // As a TPS worker opens it (src/app.ts): the primary migrated the file and checkpoints it.
  const db = await openDatabase(url, { migrate: false, checkpoint: false });
  const refuse = async (): Promise<never> => {
    throw new Error(`worker ${name} committed events itself`);
  };
  // Its transactions (facet ids) stay the worker's own.
  const own = (local: EventWriter): EventWriter => ({ transaction: (work) => local.transaction(work), insertAlone: refuse, insertNew: refuse });
  const events = new KnexEventStore(db, { commits: (local) => committedByPrimary(own(local)) });

  // The evaluate path: twenty batches at once, from each worker.
  const batches = Array.from({ length: 20 }, (_, i) => generateEvents(`commits-${name}-${i}`, 5, Date.now()) as EventRecord[]);
  await Promise.all(batches.map((b) => events.insertBatch(b)));
  // A batch the primary's writer refuses (a stored telemetryId) fails in the worker, saying why,
  // and only it: the batch sent with it, which the primary commits in the same group, is stored.
  const [refused, beside] = await Promise.allSettled([events.insertBatch([batches[0]![0]!]), events.insertBatch(generateEvents(`commits-${name}-beside`, 5, Date.now()) as EventRecord[])]);
  assert.equal(refused.status, 'rejected');
  assert.ok(refused.reason instanceof PrimaryCommitError && /unique/i.test(refused.reason.message), String(refused.reason));
  assert.equal(beside.status, 'fulfilled', String((beside as PromiseRejectedResult).reason));
  // The worker's own group commit: a batch the primary refuses for one event's fault (the refusal
  // carries its code) is committed event by event, so only that event fails.
  const committer = new GroupCommitter<EventRecord>((items) => events.insertBatch(items), 100, 0);
  const grouped = await Promise.allSettled([batches[1]![0]!, ...(generateEvents(`commits-${name}-grouped`, 2, Date.now()) as EventRecord[])].map((e) => committer.append(e)));
  assert.deepEqual(grouped.map((r) => r.status), ['rejected', 'fulfilled', 'fulfilled'], grouped.map((r) => (r.status === 'rejected' ? String(r.reason) : 'stored')).join('; '));

  // The ingest path: a taken key hands back the stored event, read by the primary.
  const [fresh] = generateEvents(`commits-${name}-new`, 1, Date.now()) as [EventRecord];
  assert.deepEqual((await events.insertNew([fresh])).inserted, [true]);
  const again = await events.insertNew([{ ...fresh, score: fresh.score + 1 }]);
  assert.deepEqual(again.inserted, [false]);
  assert.deepEqual([...again.existing.values()], [await events.get(fresh.environment, fresh.telemetryId)]);

  await db.close();
  process.exit(0);
}
