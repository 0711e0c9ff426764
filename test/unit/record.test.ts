import test from 'ava';
import { GroupCommitter } from '../../src/record/groupCommit.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { freshDatabase } from '../helpers/tps.js';

const event = (i: number): EventRecord => ({
  telemetryId: `t_${i}`,
  environment: 'unit',
  source: 'evaluate',
  createdAt: 1_700_000_000_000 + i,
  operationKey: 'customer.create',
  actorId: `a_${i}`,
  resourceType: 'customer',
  resourceId: 'c',
  decision: 'allow',
  score: 1.5,
  riskBand: 'low',
  reasons: ['low_risk_operation'],
  policyId: 'standard',
  policyVersionId: 'pv_x',
  requestSummary: { requestedCount: 1 },
  explanation: { signals: [], rules: [] },
});

test('the event writer commits concurrent appends in shared transactions, and each promise means stored', async (t) => {
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url);
  try {
    const store = new KnexEventStore(db);
    const batches: number[] = [];
    const committer = new GroupCommitter<EventRecord>(
      async (items) => {
        batches.push(items.length);
        await store.insertBatch(items);
      },
      64,
      0,
    );
    await Promise.all(Array.from({ length: 1000 }, (_, i) => committer.append(event(i))));
    t.is(await store.count('unit'), 1000);
    t.is(batches.reduce((a, b) => a + b, 0), 1000);
    t.true(batches.length < 1000 / 8, `1000 events took ${batches.length} transactions`);
    t.true(Math.max(...batches) <= 64);
    const back = await store.get('unit', 't_7');
    t.deepEqual(back?.reasons, ['low_risk_operation']);
    t.is(back?.createdAt, new Date(1_700_000_000_007).toISOString());
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('[sqlite] the writer connection a commit keeps for the next goes at once to another writer, a read and closing, even mid-commit', async (t) => {
  const fresh = freshDatabase('sqlite');
  let db = await openDatabase(fresh.url);
  try {
    const store = new KnexEventStore(db);
    // Each commit keeps the connection (src/store/keptWriter.ts); only the pool's events take it back.
    await store.insertBatch([event(1), event(2)]);
    const ingested = await store.insertNew([event(3), event(1)]);
    t.deepEqual(ingested.inserted, [true, false]);
    await store.insertBatch([event(4)]);
    t.is(await store.count('unit'), 4);
    await store.insertBatch([event(5)]);
    await db.close();
    db = await openDatabase(fresh.url, { migrate: false });
    const reopened = new KnexEventStore(db);
    t.is(await reopened.count('unit'), 5);
    // Closing while a commit is under way on the kept connection: it commits, then goes back.
    await reopened.insertBatch([event(6)]);
    const committing = reopened.insertBatch([event(7)]);
    await Promise.all([committing, db.knex.destroy()]);
    await db.close();
    db = await openDatabase(fresh.url, { migrate: false });
    t.is(await new KnexEventStore(db).count('unit'), 7);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`[${kind}] a failed batch rejects every event in it and stores none of them, nor their reasons or time marks`, async (t) => {
    const fresh = freshDatabase(kind);
    const db = await openDatabase(fresh.url);
    try {
      const store = new KnexEventStore(db);
      const committer = new GroupCommitter<EventRecord>((items) => store.insertBatch(items), 100, 0);
      await committer.append(event(1));
      const rows = async () => ({
        reasons: Number((await db.knex('event_reasons').count({ n: '*' }))[0]!.n),
        marks: await db.knex('event_time_marks').select('environment', 'bucket', 'lo', 'hi').orderBy('bucket'),
      });
      const before = await rows();
      t.is(before.reasons, 1);
      // A duplicate telemetryId in the batch violates the unique key: the whole batch must roll back.
      // Event 2 is a minute later, so its time mark would be a row of its own.
      const later = { ...event(2), createdAt: event(2).createdAt + 60_000, reasons: ['new_device', 'velocity_high'] };
      const results = await Promise.allSettled([committer.append(later), committer.append(event(3)), committer.append(event(1))]);
      t.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
      t.is(await store.count('unit'), 1);
      t.is(await store.get('unit', 't_2'), undefined);
      t.deepEqual(await rows(), before);
      // The writer recovers: the next batch is stored with its reasons and marks.
      await Promise.all([committer.append(later), committer.append(event(3))]);
      t.is(await store.count('unit'), 3);
      const after = await rows();
      t.is(after.reasons, 4);
      t.is(after.marks.length, 2);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

for (const kind of ['sqlite', 'postgres'] as const) {
  test(`[${kind}] a batch's text comes back exactly, quotes, backslashes, placeholders and all`, async (t) => {
    const fresh = freshDatabase(kind);
    const db = await openDatabase(fresh.url);
    try {
      const store = new KnexEventStore(db);
      const nasty = `it's \\ a "test" ? $1 :name -- /* ; DROP TABLE events; */ \u0000 Zoë 🧾 用户 \n`;
      const e = { ...event(1), actorId: "o'brien\\?", requestSummary: { note: nasty, list: [nasty, '?', "''"] }, explanation: { signals: [], rules: [], facts: { nasty } } };
      await store.insertBatch([e, event(2)]);
      const back = await store.get('unit', 't_1');
      t.is(back?.actorId, e.actorId);
      t.deepEqual(back?.requestSummary, e.requestSummary);
      t.deepEqual(back?.explanation, e.explanation);
      t.is(await store.count('unit'), 2);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}
