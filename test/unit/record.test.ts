import test from 'ava';
import { Ingestor } from '../../src/events/ingest.js';
import { GroupCommitter } from '../../src/record/groupCommit.js';
import { openDatabase } from '../../src/store/db.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { ingestRecord } from '../events/helpers.js';
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

/** A committer over a real store whose batches are recorded, for the tests of when a batch goes. */
async function recorded(maxWaitMs: number, run: (c: GroupCommitter<EventRecord>, batches: number[][], store: KnexEventStore) => Promise<void>): Promise<void> {
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url);
  try {
    const store = new KnexEventStore(db);
    const batches: number[][] = [];
    const committer = new GroupCommitter<EventRecord>(
      async (items) => {
        batches.push(items.map((e) => e.createdAt - event(0).createdAt));
        await store.insertBatch(items);
      },
      64,
      0,
      maxWaitMs,
    );
    await run(committer, batches, store);
  } finally {
    await db.close();
    await fresh.drop();
  }
}
const turn = () => new Promise((resolve) => setTimeout(resolve, 20));

test('a batch waits for the events announced as on their way, then goes with them', async (t) => {
  await recorded(60_000, async (committer, batches, store) => {
    const [a, b, c] = [committer.expect(), committer.expect(), committer.expect()];
    const first = a.append(event(1));
    await turn();
    t.deepEqual(batches, [], 'two events are still on their way: the batch waits');
    const second = b.append(event(2));
    await turn();
    t.deepEqual(batches, []);
    // The last one fails: nothing is on its way any more, and the batch goes without a wait.
    c.withdraw();
    c.withdraw();
    await Promise.all([first, second]);
    t.deepEqual(batches, [[1, 2]]);
    t.is(await store.count('unit'), 2);
  });
});

// No timing is asserted: a wait that should not happen would be of a minute, past ava's timeout.
test('with nothing on its way a batch goes at once, whatever maxWaitMs', async (t) => {
  await recorded(60_000, async (committer, batches) => {
    await committer.expect().append(event(1));
    await committer.append(event(2));
    t.deepEqual(batches, [[1], [2]]);
  });
});

test('an announced event that never comes is waited for no longer than maxWaitMs', async (t) => {
  await recorded(100, async (committer, batches) => {
    const late = committer.expect();
    await committer.expect().append(event(1));
    t.deepEqual(batches, [[1]]);
    // It comes at last, alone: nothing else is on its way.
    await late.append(event(2));
    t.deepEqual(batches, [[1], [2]]);
  });
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
  test(`[${kind}] a batch that fails on a taken telemetryId commits its other events alone and refuses only that one, leaving nothing of the failed attempts`, async (t) => {
    const fresh = freshDatabase(kind);
    const db = await openDatabase(fresh.url);
    try {
      const store = new KnexEventStore(db);
      const batches: string[][] = [];
      const committer = new GroupCommitter<EventRecord>((items) => (batches.push(items.map((e) => e.telemetryId)), store.insertBatch(items)), 100, 0);
      await committer.append(event(1));
      const rows = async () => ({
        reasons: Number((await db.knex('event_reasons').count({ n: '*' }))[0]!.n),
        marks: await db.knex('event_time_marks').select('environment', 'bucket', 'lo', 'hi').orderBy('bucket'),
      });
      t.is((await rows()).reasons, 1);
      // Event 1 is stored: the batch fails whole, then each event is committed alone. Event 2 is
      // a minute later, so its time mark would be a row of its own.
      const later = { ...event(2), createdAt: event(2).createdAt + 60_000, reasons: ['new_device', 'velocity_high'] };
      const results = await Promise.allSettled([committer.append(later), committer.append(event(3)), committer.append(event(1))]);
      t.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected']);
      t.regex(String((results[2] as PromiseRejectedResult).reason), /unique|duplicate/i);
      t.deepEqual(batches.slice(1), [['t_2', 't_3', 't_1'], ['t_2'], ['t_3'], ['t_1']]);
      t.is(await store.count('unit'), 3);
      // The failed batch rolled back whole: each stored event has its reasons and marks once.
      const after = await rows();
      t.is(after.reasons, 4);
      t.is(after.marks.length, 2);
      // A batch whose every event is refused fails each, and changes nothing.
      const taken = await Promise.allSettled([committer.append(event(1)), committer.append(event(3))]);
      t.deepEqual(taken.map((r) => r.status), ['rejected', 'rejected']);
      t.is(await store.count('unit'), 3);
      t.deepEqual(await rows(), after);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

// A row PostgreSQL refuses (jsonb holds no NUL) fails the batch that carries it. Validation refuses
// such text over HTTP, so it comes through the store layer here.
test('[postgres] a batch holding a row the store refuses commits the others, each answered once its own commit is done, and refuses only that one', async (t) => {
  const fresh = freshDatabase('postgres');
  const db = await openDatabase(fresh.url);
  try {
    const store = new KnexEventStore(db);
    const batches: string[][] = [];
    const committer = new GroupCommitter<EventRecord>((items) => (batches.push(items.map((e) => e.telemetryId)), store.insertBatch(items)), 100, 0);
    const bad = { ...event(2), actorId: 'user_\u00007' };
    const results = await Promise.allSettled([committer.append(event(1)), committer.append(bad), committer.append(event(3))]);
    t.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    t.deepEqual(batches, [['t_1', 't_2', 't_3'], ['t_1'], ['t_2'], ['t_3']]);
    t.is(await store.count('unit'), 2);
    t.is(await store.get('unit', 't_2'), undefined);
    t.is((await store.get('unit', 't_3'))?.actorId, 'a_3');
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('[postgres] an ingest batch holding a row the store refuses stores the others and refuses only that one', async (t) => {
  const fresh = freshDatabase('postgres');
  const db = await openDatabase(fresh.url);
  try {
    const store = new KnexEventStore(db);
    const ingestor = new Ingestor(store, { maxBatch: 100, maxDelayMs: 0 });
    const records = [ingestRecord(), ingestRecord({ actorId: 'user_\u00007' }), ingestRecord()];
    // One turn: the three share a batch.
    const results = await Promise.allSettled(records.map((r) => ingestor.ingest('unit', r)));
    t.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    t.deepEqual([results[0], results[2]].map((r) => (r as PromiseFulfilledResult<string>).value), ['stored', 'stored']);
    t.is(await store.count('unit'), 2);
    t.is(await store.get('unit', records[1]!.telemetryId), undefined);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('a store that cannot be reached fails a whole batch at once: its events are not tried alone', async (t) => {
  // Nothing listens on port 1: every connection is refused.
  const db = await openDatabase('postgres://root@127.0.0.1:1/test', { migrate: false });
  try {
    const store = new KnexEventStore(db);
    let writes = 0;
    const committer = new GroupCommitter<EventRecord>((items) => (writes++, store.insertBatch(items)), 100, 0);
    const results = await Promise.allSettled([1, 2, 3].map((i) => committer.append(event(i))));
    t.deepEqual(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
    t.regex(String((results[0] as PromiseRejectedResult).reason), /ECONNREFUSED/);
    t.is(writes, 1);
  } finally {
    await db.close();
  }
});

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
