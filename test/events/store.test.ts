import crypto from 'node:crypto';
import test from 'ava';
import fs from 'node:fs';
import knexFactory, { type Knex } from 'knex';
import { CursorCodec } from '../../src/events/cursor.js';
import { parseSse, type SseState } from '../../src/events/sseParser.js';
import { openDatabase, PAGE_SIZE, sqliteTooOld } from '../../src/store/db.js';
import type { EventFilter } from '../../src/store/eventFilter.js';
import { KnexEventStore, type EventRecord } from '../../src/store/eventStore.js';
import { keyOf, toRow } from '../../src/store/eventRows.js';
import { migrationSource } from '../../src/store/migrations.js';
import { WRITER_LOCK_CLASS } from '../../src/store/eventWriteTx.js';
import { ID_CHUNK_BITS } from '../../src/store/idChunks.js';
import { hash32, reasonKeys } from '../../src/store/reasonIndex.js';
import { freshDatabase, type StoreKind } from '../helpers/tps.js';
import { generateEvents, storePages } from './helpers.js';

/** The telemetryIds of the events (stored in this order) that a filter must find, newest first: worked out apart from the store's own matching. */
function newestFirstMatching(events: readonly EventRecord[], filter: EventFilter): string[] {
  return events
    .filter((e) => Object.entries(filter).every(([k, v]) => (k === 'reason' ? e.reasons.includes(v as string) : e[k as keyof EventRecord] === v)))
    .map((e) => e.telemetryId)
    .reverse();
}

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] migration 002 indexes the reasons of events stored before it, and old rows stay readable`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url, { migrate: false });
    try {
      const schema = store === 'postgres' ? (db.knex.client.config.searchPath as string[])[0] : undefined;
      if (schema) await db.knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
      await db.knex.migrate.up({ migrationSource, schemaName: schema, name: '001_core' });
      const [legacy] = generateEvents('legacy', 1, Date.now());
      // A row as the service wrote it before 002: the explanation as JSON text.
      await db.knex('events').insert({
        telemetry_id: legacy!.telemetryId,
        environment: legacy!.environment,
        source: legacy!.source,
        created_at: legacy!.createdAt,
        operation_key: legacy!.operationKey,
        actor_id: legacy!.actorId,
        resource_type: legacy!.resourceType,
        resource_id: legacy!.resourceId,
        decision: legacy!.decision,
        score: legacy!.score,
        risk_band: legacy!.riskBand,
        reasons: JSON.stringify(legacy!.reasons),
        policy_id: legacy!.policyId,
        policy_version_id: legacy!.policyVersionId,
        request_summary: JSON.stringify(legacy!.requestSummary),
        explanation: JSON.stringify(legacy!.explanation),
      });
      await db.knex.migrate.latest({ migrationSource, schemaName: schema });
      const events = new KnexEventStore(db);
      const back = await events.get('legacy', legacy!.telemetryId);
      t.deepEqual(back?.explanation, legacy!.explanation);
      for (const reason of legacy!.reasons) {
        const found = await events.page('legacy', { reason }, { order: 'desc', limit: 10 });
        t.deepEqual(found.map((e) => e.telemetryId), [legacy!.telemetryId], reason);
      }
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] migration 004 gives events stored before it their facets, and every filter still finds them`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url, { migrate: false });
    try {
      const schema = store === 'postgres' ? (db.knex.client.config.searchPath as string[])[0] : undefined;
      if (schema) await db.knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
      for (const name of ['001_core', '002_event_search', '003_operations']) await db.knex.migrate.up({ migrationSource, schemaName: schema, name });
      const legacy = generateEvents('legacy', 40, Date.now() - 60_000);
      // Rows as the service wrote them before 004: no facet.
      for (const e of legacy) {
        const [row] = await db.knex('events')
          .insert({ ...toRow(e), ...(store === 'postgres' ? { reason_keys: reasonKeys(e.environment, e.reasons) } : {}) })
          .returning('seq');
        const seq = Number((row as { seq: number }).seq);
        if (store === 'sqlite') for (const key of reasonKeys(e.environment, e.reasons)) await db.knex('event_reasons').insert({ key, seq });
      }
      await db.knex.migrate.latest({ migrationSource, schemaName: schema });
      const events = new KnexEventStore(db);
      // And one written after it, by the service.
      const [later] = generateEvents('legacy', 41, Date.now()).slice(40);
      await events.insertBatch([later!]);
      const all = [...legacy, later!];
      const filters = [
        { decision: 'deny' as const },
        { operationKey: 'invoice.export', riskBand: 'medium' as const },
        { source: 'ingest' as const, resourceType: 'customer' },
        { reason: 'bulk_or_export_volume', decision: 'allow' as const },
        { actorId: 'actor_3', source: 'evaluate' as const },
      ];
      for (const filter of filters) {
        const expected = newestFirstMatching(all, filter);
        const found = await events.page('legacy', filter, { order: 'desc', limit: 100 });
        t.true(expected.length > 0, JSON.stringify(filter));
        t.deepEqual(found.map((e) => e.telemetryId), expected, JSON.stringify(filter));
      }
    } finally {
      await db.close();
      await fresh.drop();
    }
  });

  test(`[${store}] each migration rolls back and applies again, and the events stored before are found by every filter`, async (t) => {
    const fresh = freshDatabase(store);
    const all = generateEvents('roll', 40, Date.now() - 60_000);
    const filters = [
      { decision: 'deny' as const },
      { operationKey: 'invoice.export', riskBand: 'medium' as const },
      { reason: 'bulk_or_export_volume', decision: 'allow' as const },
      { actorId: 'actor_3', source: 'evaluate' as const },
      { resourceId: all[5]!.resourceId },
    ];
    // Each step on a connection of its own, as an operator's rollback would run.
    const step = async <T>(work: (db: Awaited<ReturnType<typeof openDatabase>>, schema: string | undefined) => Promise<T>, migrate = false): Promise<T> => {
      const db = await openDatabase(fresh.url, { migrate });
      try {
        return await work(db, store === 'postgres' ? (db.knex.client.config.searchPath as string[])[0] : undefined);
      } finally {
        await db.close();
      }
    };
    const findsAll = (label: string) =>
      step(async (db) => {
        const events = new KnexEventStore(db);
        for (const filter of filters) {
          const expected = newestFirstMatching(all, filter);
          t.true(expected.length > 0, JSON.stringify(filter));
          t.deepEqual((await events.page('roll', filter, { order: 'desc', limit: 100 })).map((e) => e.telemetryId), expected, `${label}: ${JSON.stringify(filter)}`);
        }
        for (const e of all) t.deepEqual((await events.get('roll', e.telemetryId))?.explanation, e.explanation, `${label}: the explanation of ${e.telemetryId}`);
      }, true);
    try {
      await step((db) => new KnexEventStore(db).insertBatch(all), true);
      await findsAll('as stored');
      // Down to 001 one migration at a time: the events stay, then come back indexed.
      for (const name of ['005_event_id_chunks', '004_event_facets', '003_operations', '002_event_search']) {
        await step(async (db, schema) => {
          await db.knex.migrate.down({ migrationSource, schemaName: schema, name });
          t.is(Number((await db.knex('events').count({ n: '*' }))[0]!.n), all.length, `after ${name} down`);
        });
      }
      await findsAll('down to 001 and up again');
      // All the way down leaves none of TPS's tables; up again gives a store that works.
      await step(async (db, schema) => {
        await db.knex.migrate.rollback({ migrationSource, schemaName: schema }, true);
        for (const table of ['events', 'event_reasons', 'event_facets', 'event_time_marks', 'operations', 'api_keys', 'environments', 'policy_versions', 'service_secrets']) {
          t.false(await db.knex.schema.withSchema(schema ?? '').hasTable(table), table);
        }
      });
      await step((db) => new KnexEventStore(db).insertBatch(all), true);
      await findsAll('rolled back and stored again');
    } finally {
      await fresh.drop();
    }
  });

  test(`[${store}] a process that has written events rolls back on its own connections, migrates up again and goes on writing`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url);
    try {
      const schema = store === 'postgres' ? (db.knex.client.config.searchPath as string[])[0] : undefined;
      const events = new KnexEventStore(db);
      const all = generateEvents('inproc', 30, Date.now() - 60_000);
      // The writer's connection now holds what its batches go through (SQLite: a TEMP trigger
      // naming the tables that 004's rollback renames).
      await events.insertBatch(all.slice(0, 15));
      for (const name of ['005_event_id_chunks', '004_event_facets', '003_operations', '002_event_search']) {
        await db.knex.migrate.down({ migrationSource, schemaName: schema, name });
      }
      const [, pending] = (await db.knex.migrate.list({ migrationSource, schemaName: schema })) as [unknown[], unknown[]];
      t.is(pending.length, 4);
      await db.knex.migrate.latest({ migrationSource, schemaName: schema });
      await events.insertBatch(all.slice(15));
      const expected = newestFirstMatching(all, { decision: 'deny' });
      t.true(expected.length > 0);
      t.deepEqual((await events.page('inproc', { decision: 'deny' }, { order: 'desc', limit: 100 })).map((e) => e.telemetryId), expected);
      for (const e of all) t.deepEqual((await events.get('inproc', e.telemetryId))?.explanation, e.explanation, e.telemetryId);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });

  test(`[${store}] time ranges stay exact when two writers store events of other minutes at once`, async (t) => {
    const fresh = freshDatabase(store);
    // Two service instances on one store; each batch lands on minutes the other may be writing.
    const dbs = [await openDatabase(fresh.url), await openDatabase(fresh.url, { migrate: false })];
    try {
      const writers = dbs.map((db) => new KnexEventStore(db));
      const minute = 60_000;
      const minutes = 400;
      const start = Math.floor(Date.now() / minute) * minute - minutes * minute;
      const all = generateEvents('race', 800, start);
      // Writer k stores events k, k+2, k+4, … at minutes scrambled over the range, so most batches
      // add minutes while the other writer is adding its own.
      all.forEach((e, i) => (e.createdAt = start + ((i * 7919) % minutes) * minute + (i % 50) * 1000));
      await Promise.all(
        writers.map(async (w, k) => {
          const mine = all.filter((_, i) => i % 2 === k);
          for (let i = 0; i < mine.length; i += 8) await w.insertBatch(mine.slice(i, i + 8));
        }),
      );
      for (let from = 0; from < minutes; from += 23) {
        for (const length of [1, 4, 60]) {
          const [fromMs, toMs] = [start + from * minute, start + (from + length) * minute];
          const want = all.filter((e) => e.createdAt >= fromMs && e.createdAt < toMs).map((e) => e.telemetryId).sort();
          const got = await writers[0]!.page('race', { fromMs, toMs }, { order: 'asc', limit: 1000 });
          t.deepEqual(got.map((e) => e.telemetryId).sort(), want, `minutes ${from} to ${from + length}`);
        }
      }
    } finally {
      for (const db of dbs) await db.close();
      await fresh.drop();
    }
  });

  test(`[${store}] facet filters merge many facets in seq order; a combination that never occurred finds nothing`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url);
    try {
      const events = new KnexEventStore(db);
      // 260 operations × 2 decisions: more facets than one statement reads (ARMS = 200).
      const stored = generateEvents('facets', 1040, Date.now() - 3_600_000).map((e, i) => ({ ...e, operationKey: `op.${i % 260}`, decision: i % 2 ? ('deny' as const) : ('allow' as const) }));
      for (let i = 0; i < stored.length; i += 100) await events.insertBatch(stored.slice(i, i + 100));
      const denied = stored.filter((e) => e.decision === 'deny').map((e) => e.telemetryId);
      const newest = await events.page('facets', { decision: 'deny' }, { order: 'desc', limit: 30 });
      t.deepEqual(newest.map((e) => e.telemetryId), denied.slice(-30).reverse());
      const oldest = await events.page('facets', { decision: 'deny' }, { order: 'asc', limit: 30 });
      t.deepEqual(oldest.map((e) => e.telemetryId), denied.slice(0, 30));
      const next = await events.page('facets', { decision: 'deny' }, { order: 'asc', after: oldest.at(-1)!.seq, limit: 30 });
      t.deepEqual(next.map((e) => e.telemetryId), denied.slice(30, 60));
      const window = await events.page('facets', { decision: 'deny', source: 'evaluate' }, { order: 'desc', before: newest[10]!.seq, limit: 5 });
      t.deepEqual(
        window.map((e) => e.telemetryId),
        stored
          .filter((e) => e.decision === 'deny' && e.source === 'evaluate')
          .map((e) => e.telemetryId)
          .filter((id) => denied.indexOf(id) < denied.indexOf(newest[10]!.telemetryId))
          .slice(-5)
          .reverse(),
      );
      t.deepEqual(await events.page('facets', { operationKey: 'op.1', decision: 'allow' }, { order: 'desc', limit: 50 }), []);
      t.deepEqual(await events.page('facets', { operationKey: 'op.1', decision: 'throttle', riskBand: 'low' }, { order: 'asc', limit: 50 }), []);
      t.deepEqual(await events.page('other', { decision: 'deny' }, { order: 'desc', limit: 50 }), []);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] an identifier's events hundreds of chunks of seqs apart are all found, in both directions and with other filters`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url);
    try {
      const events = new KnexEventStore(db);
      // Each pair of events is followed by a gap of 300 chunks of seqs (idChunks.ts): ~1,800 in all, more than one read probes (MAX_CHUNKS = 1,024).
      const gap = async () => {
        const next = (await events.head()) + 300 * 2 ** ID_CHUNK_BITS;
        if (store === 'sqlite') await db.knex.raw("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", [next]);
        else await db.knex.raw("SELECT setval(pg_get_serial_sequence('events', 'seq'), ?)", [next]);
      };
      const stored = generateEvents('ids', 12, Date.now() - 3_600_000).map((e, i) => ({
        ...e,
        actorId: i % 3 === 0 ? 'rare' : `actor_${i}`,
        resourceId: i % 4 === 0 ? 'doc' : `res_${i}`,
        decision: i % 2 ? ('deny' as const) : ('allow' as const),
      }));
      for (let i = 0; i < stored.length; i += 2) {
        await events.insertBatch(stored.slice(i, i + 2));
        await gap();
      }
      t.true((await events.head()) > 1_500_000, 'the gaps were made');
      const walk = (filter: EventFilter, order: 'asc' | 'desc', limit: number) => storePages(events, 'ids', filter, order, limit);
      const filters: EventFilter[] = [{ actorId: 'rare' }, { resourceId: 'doc' }, { actorId: 'rare', resourceId: 'doc' }, { actorId: 'rare', decision: 'deny' }, { resourceId: 'doc', decision: 'allow' }];
      for (const filter of filters) {
        const expected = newestFirstMatching(stored, filter);
        t.true(expected.length > 0, JSON.stringify(filter));
        for (const limit of [1, 2, 50]) {
          t.deepEqual(await walk(filter, 'desc', limit), expected, `desc ${limit} ${JSON.stringify(filter)}`);
          t.deepEqual(await walk(filter, 'asc', limit), [...expected].reverse(), `asc ${limit} ${JSON.stringify(filter)}`);
        }
      }
      t.deepEqual(await events.page('ids', { actorId: 'rare', decision: 'throttle' }, { order: 'desc', limit: 50 }), []);
      t.deepEqual(await events.page('other', { actorId: 'rare' }, { order: 'desc', limit: 50 }), []);
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

/** SQLite bumps the WAL's checkpoint sequence number (header bytes 12-15, big-endian) each time the WAL starts over. */
function walRestarts(wal: string): number {
  const header = Buffer.alloc(16);
  const fd = fs.openSync(wal, 'r');
  fs.readSync(fd, header, 0, 16, 0);
  fs.closeSync(fd);
  return header.readUInt32BE(12);
}

test('[sqlite] under commits that never pause, the writer catches up once the WAL holds its frames, and the WAL starts over', async (t) => {
  const fresh = freshDatabase('sqlite');
  const catchUps: number[] = [];
  // 1 MiB, so that the WAL fills many times in a short test.
  const db = await openDatabase(fresh.url, { onCheckpoint: (seconds) => catchUps.push(seconds), sqliteWalMb: 1 });
  const wal = `${fresh.url.slice('sqlite:'.length)}-wal`;
  try {
    const events = new KnexEventStore(db);
    // One event per commit from four writers at once, so that a commit always waits and no bulk
    // checkpoint reaches the WAL's end: at least 1,500 commits (~18 MiB of frames). Without the
    // writer's catch-up the WAL would then never start over and would hold every commit.
    const stored = generateEvents('wal', 20_000, Date.now() - 3_600_000);
    const until = Date.now() + 2500;
    let [largest, n] = [0, 0];
    const writer = async () => {
      while (n < 1500 || (Date.now() < until && n < stored.length)) {
        await events.insertBatch([stored[n++]!]);
        largest = Math.max(largest, fs.statSync(wal).size);
      }
    };
    await Promise.all([writer(), writer(), writer(), writer()]);
    t.true(walRestarts(wal) >= 3, `the WAL started over ${walRestarts(wal)} times in ${n} commits`);
    t.true(catchUps.length >= 3, `${catchUps.length} catch-ups in ${n} commits`);
    // A catch-up follows the bulk checkpoint that found the WAL full, so it holds at most what
    // commits add in one checkpoint interval beyond that.
    t.true(largest < 8 * 2 ** 20, `the WAL reached ${(largest / 2 ** 20).toFixed(1)} MiB`);
    t.is(Number((await db.knex('events').count({ n: '*' }))[0]!.n), n);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('[sqlite] at a light rate the writer is never held: the bulk checkpoints copy the WAL, which starts over by itself', async (t) => {
  const fresh = freshDatabase('sqlite');
  const catchUps: number[] = [];
  const db = await openDatabase(fresh.url, { onCheckpoint: (seconds) => catchUps.push(seconds) });
  const file = fresh.url.slice('sqlite:'.length);
  try {
    const events = new KnexEventStore(db);
    const stored = generateEvents('light', 100, Date.now() - 3_600_000);
    // A commit every 20 ms for 1.5 s: fifteen bulk checkpoints, each with time to reach the WAL's
    // end, and at most ~75 commits of ~12 frames, far below the default WAL_CATCH_UP_MB.
    // In WAL mode only a checkpoint writes the database file, so each change of its mtime is one
    // that copied frames into it. (Not its size: the first pages come from the freelist that the
    // migrations left, and under load few enough commits fit in the time that the file need not grow.)
    const restarted = walRestarts(`${file}-wal`);
    let [n, written, mtime] = [0, 0, fs.statSync(file).mtimeMs];
    const until = Date.now() + 1500;
    while (Date.now() < until && n < stored.length) {
      await events.insertBatch([stored[n++]!]);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const now = fs.statSync(file).mtimeMs;
      if (now !== mtime) [written, mtime] = [written + 1, now];
    }
    t.deepEqual(catchUps, [], 'no catch-up: the WAL never came near its size');
    t.true(written >= 1, 'the database file was written, by the bulk checkpoints alone');
    t.true(walRestarts(`${file}-wal`) > restarted, 'the WAL started over during the commits, without a catch-up');
    t.is(Number((await db.knex('events').count({ n: '*' }))[0]!.n), n);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('[sqlite] a store opened with checkpoint: false leaves the WAL to another process: its commits stay in the WAL', async (t) => {
  // A cluster worker's store, whose primary checkpoints the file (src/cluster/primary.ts).
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url, { checkpoint: false });
  const file = fresh.url.slice('sqlite:'.length);
  try {
    t.is(db.checkpoints, undefined);
    const events = new KnexEventStore(db);
    const stored = generateEvents('uncheckpointed', 20, Date.now() - 3_600_000);
    // The light-rate test's pace, at which a checkpointer copies frames into the file within ~100 ms.
    const mtime = fs.statSync(file).mtimeMs;
    const walBefore = fs.statSync(`${file}-wal`).size;
    for (const event of stored) {
      await events.insertBatch([event]);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.is(fs.statSync(file).mtimeMs, mtime, 'nothing copied the WAL into the database file');
    t.true(fs.statSync(`${file}-wal`).size > walBefore, 'the commits are in the WAL');
    t.is(Number((await db.knex('events').count({ n: '*' }))[0]!.n), stored.length);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('[sqlite] a new store is made of 1 KiB pages unless asked for others; a store keeps the pages it was made with and takes events', async (t) => {
  t.is(PAGE_SIZE, 1024);
  const pageSize = async (db: Awaited<ReturnType<typeof openDatabase>>) => {
    const [writer] = (await db.knex.raw('PRAGMA page_size')) as [{ page_size: number }];
    const [reader] = (await db.reader.raw('PRAGMA page_size')) as [{ page_size: number }];
    return [writer.page_size, reader.page_size];
  };
  const stored = generateEvents('pages', 40, Date.now() - 60_000);
  const fresh = freshDatabase('sqlite');
  const old = freshDatabase('sqlite');
  const larger = freshDatabase('sqlite');
  try {
    const db = await openDatabase(fresh.url);
    try {
      t.deepEqual(await pageSize(db), [PAGE_SIZE, PAGE_SIZE]);
      t.is(db.pageSize, PAGE_SIZE);
      await new KnexEventStore(db).insertBatch(stored.slice(0, 20));
    } finally {
      await db.close();
    }
    // Reopened, it is the same file: the setting changes nothing once the file exists.
    const again = await openDatabase(fresh.url);
    try {
      t.deepEqual(await pageSize(again), [PAGE_SIZE, PAGE_SIZE]);
      t.is(Number((await again.knex('events').count({ n: '*' }))[0]!.n), 20);
    } finally {
      await again.close();
    }

    // A file SQLite created before this setting, with its default 4 KiB pages.
    const file = old.url.slice('sqlite:'.length);
    const made = knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
    await made.raw('PRAGMA page_size=4096');
    await made.raw('CREATE TABLE made_before (a integer)');
    await made.destroy();
    const before = await openDatabase(old.url);
    try {
      t.deepEqual(await pageSize(before), [4096, 4096]);
      const events = new KnexEventStore(before);
      await events.insertBatch(stored.slice(20));
      t.is(Number((await before.knex('events').count({ n: '*' }))[0]!.n), 20);
    } finally {
      await before.close();
    }

    // Asked for 4 KiB pages, a new file has them, and keeps them when opened with the default.
    const asked = await openDatabase(larger.url, { sqlitePageSize: 4096 });
    try {
      t.deepEqual(await pageSize(asked), [4096, 4096]);
      t.is(asked.pageSize, 4096);
      await new KnexEventStore(asked).insertBatch(stored.slice(0, 20));
    } finally {
      await asked.close();
    }
    const reopened = await openDatabase(larger.url);
    try {
      t.is(reopened.pageSize, 4096);
      await new KnexEventStore(reopened).insertBatch(stored.slice(20));
      t.is(Number((await reopened.knex('events').count({ n: '*' }))[0]!.n), 40);
    } finally {
      await reopened.close();
    }
  } finally {
    await fresh.drop();
    await old.drop();
    await larger.drop();
  }
});

test('[sqlite] a SQLite older than 3.51 (no jsonb_each for the event writer) is refused; the bundled one opens', async (t) => {
  for (const old of ['3.50.4', '3.45.0', '2.99.0']) t.true(sqliteTooOld(old), old);
  for (const ok of ['3.51.0', '3.52.0', '4.0.0']) t.false(sqliteTooOld(ok), ok);
  const fresh = freshDatabase('sqlite');
  const db = await openDatabase(fresh.url);
  try {
    const [{ version }] = await db.knex.raw('SELECT sqlite_version() AS version');
    t.false(sqliteTooOld(version), version);
  } finally {
    await db.close();
    await fresh.drop();
  }
});

test('cursors round-trip in their environment and anything else is refused', (t) => {
  const cursors = new CursorCodec(crypto.randomBytes(32));
  for (const seq of [0, 1, 42, 9_007_199_254_740_991]) {
    const cursor = cursors.encode('env', seq);
    t.regex(cursor, /^[A-Za-z0-9_-]{22}$/);
    t.is(cursors.decode('env', cursor), seq);
    t.is(cursors.decode('other', cursor), undefined, 'another environment');
    t.is(new CursorCodec(crypto.randomBytes(32)).decode('env', cursor), undefined, 'another secret');
  }
  const good = cursors.encode('env', 5);
  const flipped = `${good[0] === 'A' ? 'B' : 'A'}${good.slice(1)}`;
  for (const bad of ['', 'abc', good.slice(1), `${good}A`, flipped, Buffer.from('e1.5').toString('base64url'), Buffer.from('e1.1234567890123').toString('base64url'), 'x'.repeat(60)]) {
    t.is(cursors.decode('env', bad), undefined, bad);
  }
});

test('the SSE parser reads ids, multi-line data, comments and CRLF split across chunks', async (t) => {
  async function* chunks() {
    yield 'retry: 10\n: hello\r\nid: a\ndata: {"x":';
    yield '1}\n\nid: b\ndata: line1\ndata: line2\r\n\r\n';
    yield 'data: no id\n\n';
  }
  const items = [];
  for await (const item of parseSse(chunks())) items.push(item);
  t.deepEqual(items, [
    { kind: 'comment', text: 'hello' },
    { kind: 'message', id: 'a', event: undefined, data: '{"x":1}' },
    { kind: 'message', id: 'b', event: undefined, data: 'line1\nline2' },
    // An id persists until the server sends another (the SSE standard).
    { kind: 'message', id: 'b', event: undefined, data: 'no id' },
  ]);
});

test('the SSE parser keeps the last event id as EventSource does: across messages, from blocks with no data, across connections', async (t) => {
  async function* first() {
    yield 'retry: 2000\nid: p0\n: connected\n\n';
    yield 'data: a\n\nid: e1\ndata: b\n\n';
    yield 'id: p2\n: heartbeat\n\n';
    // The standard ignores an id with a NUL; a block the connection drops in the middle of sets none.
    yield 'id: x\0y\ndata: c\n\nid: p3\ndata: cut off';
  }
  const state: SseState = {};
  const seen: [string, string | undefined, string | undefined][] = [];
  for await (const item of parseSse(first(), state)) seen.push([item.kind === 'message' ? item.data : item.text, item.kind === 'message' ? item.id : undefined, state.lastEventId]);
  t.deepEqual(seen, [
    ['connected', undefined, undefined],
    ['a', 'p0', 'p0'],
    ['b', 'e1', 'e1'],
    ['heartbeat', undefined, 'e1'],
    ['c', 'p2', 'p2'],
  ]);
  t.is(state.lastEventId, 'p2', 'a block with an id and no data sets it');

  // The next connection starts from it; an empty id clears it.
  async function* second() {
    yield 'data: d\n\nid\n\n';
  }
  const items = [];
  for await (const item of parseSse(second(), state)) items.push(item);
  t.deepEqual(items, [{ kind: 'message', id: 'p2', event: undefined, data: 'd' }]);
  t.is(state.lastEventId, '');
});

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] insertNew stores each new key once and hands back the stored event of a taken key; evaluate's batches stay strict beside it`, async (t) => {
    const fresh = freshDatabase(store);
    const db = await openDatabase(fresh.url);
    try {
      const events = new KnexEventStore(db);
      const [a, b, c, d] = generateEvents('insert-new', 4, Date.now()) as [EventRecord, EventRecord, EventRecord, EventRecord];
      t.deepEqual((await events.insertNew([a, b])).inserted, [true, true]);
      const second = await events.insertNew([{ ...a, score: a.score + 1 }, c, c]);
      t.deepEqual(second.inserted, [false, true, false]);
      t.deepEqual(second.existing.get(keyOf(a.environment, a.telemetryId)), await events.get(a.environment, a.telemetryId));
      t.is(second.existing.get(keyOf(c.environment, c.telemetryId)), c);
      t.deepEqual([...second.existing.keys()].sort(), [keyOf(a.environment, a.telemetryId), keyOf(c.environment, c.telemetryId)].sort());
      // A batch with nothing taken hands back nothing, whatever the one before found.
      t.deepEqual(await events.insertNew([d]), { inserted: [true], existing: new Map(), unreadable: new Map() });
      await t.throwsAsync(events.insertBatch([b]), { message: /unique|duplicate/i });
      const page = await events.page('insert-new', {}, { order: 'asc', limit: 10 });
      t.deepEqual(page.map((x) => [x.telemetryId, x.score]), [a, b, c, d].map((x) => [x.telemetryId, x.score]));
    } finally {
      await db.close();
      await fresh.drop();
    }
  });
}

/** A store whose every query runs on one PostgreSQL connection, so a test can look into the writer's session. */
async function onOneConnection(work: (events: KnexEventStore, single: Knex) => Promise<void>): Promise<void> {
  const fresh = freshDatabase('postgres');
  const db = await openDatabase(fresh.url);
  const url = new URL(fresh.url);
  const schema = url.searchParams.get('schema')!;
  url.searchParams.delete('schema');
  const single = knexFactory({ client: 'pg', connection: url.toString(), searchPath: [schema], pool: { min: 1, max: 1 } });
  try {
    await work(new KnexEventStore({ ...db, knex: single, reader: single }), single);
  } finally {
    await single.destroy();
    await db.close();
    await fresh.drop();
  }
}

test('[postgres] a writer connection commits through its session function, and without it through the plain statement', async (t) => {
  await onOneConnection(async (events, single) => {
    const made = async () => ((await single.raw("SELECT to_regprocedure('pg_temp.tps_insert_events(jsonb)') IS NOT NULL AS made")).rows as { made: boolean }[])[0]!.made;
    const [a, b, c] = generateEvents('session', 3, Date.now());
    t.false(await made());
    await events.insertBatch([a!]);
    t.true(await made(), 'made by the first commit');
    // The next commit goes through it: one that refuses fails the batch.
    await single.raw("CREATE OR REPLACE FUNCTION pg_temp.tps_insert_events(batch_json jsonb) RETURNS SETOF bigint LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'refused here'; END $f$");
    await t.throwsAsync(events.insertBatch([b!]), { message: /refused here/ });
    await single.raw('DROP FUNCTION pg_temp.tps_insert_events(jsonb)');
    await events.insertBatch([b!]);
    await events.insertBatch([c!]);
    t.false(await made(), 'a connection that lost it goes on without it');
    const stored = await events.page('session', {}, { order: 'asc', limit: 10 });
    t.deepEqual(stored.map((e) => e.telemetryId), [a, b, c].map((e) => e!.telemetryId));
    for (const e of [a, b, c]) t.deepEqual((await events.page('session', { reason: e!.reasons[0]! }, { order: 'asc', limit: 10 })).map((x) => x.telemetryId).includes(e!.telemetryId), true);
    await t.throwsAsync(events.insertBatch([a!]), { message: /unique|duplicate/i }, 'a taken telemetryId still fails the batch');
  });
});

test('[postgres] an ingest batch commits through its session function, which returns the stored events of taken keys; without it, through a transaction', async (t) => {
  await onOneConnection(async (events, single) => {
    const made = async () => ((await single.raw("SELECT to_regprocedure('pg_temp.tps_insert_new_events(jsonb)') IS NOT NULL AS made")).rows as { made: boolean }[])[0]!.made;
    const stored = async (e: EventRecord) => (await events.get(e.environment, e.telemetryId))!;
    const [a, b, c, d, e] = generateEvents('ingest-session', 5, Date.now()) as [EventRecord, EventRecord, EventRecord, EventRecord, EventRecord];
    t.false(await made());
    t.deepEqual((await events.insertNew([a, b])).inserted, [true, true]);
    t.true(await made(), 'made by the first ingest');
    // A taken key comes back as stored (its explanation decoded); a repeat in the batch meets its first.
    const again = { ...a, score: a.score + 1 };
    const second = await events.insertNew([again, c, c]);
    t.deepEqual(second.inserted, [false, true, false]);
    t.deepEqual(second.existing.get(keyOf(a.environment, a.telemetryId)), await stored(a));
    t.is(second.existing.get(keyOf(c.environment, c.telemetryId)), c);
    // The next ingest goes through it: one that refuses fails the batch, and stores nothing.
    await single.raw("CREATE OR REPLACE FUNCTION pg_temp.tps_insert_new_events(batch_json jsonb) RETURNS SETOF text LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'refused here'; END $f$");
    await t.throwsAsync(events.insertNew([d]), { message: /refused here/ });
    t.is(await events.get(d.environment, d.telemetryId), undefined);
    await single.raw('DROP FUNCTION pg_temp.tps_insert_new_events(jsonb)');
    const third = await events.insertNew([d, b, e]);
    t.false(await made(), 'a connection that lost it goes on without it');
    t.deepEqual(third.inserted, [true, false, true]);
    t.deepEqual(third.existing.get(keyOf(b.environment, b.telemetryId)), await stored(b));
    const page = await events.page('ingest-session', {}, { order: 'asc', limit: 10 });
    t.deepEqual(page.map((x) => x.telemetryId), [a, b, c, d, e].map((x) => x.telemetryId));
    t.is(page[0]!.score, a.score, 'the first content stays');
    for (const x of [c, e]) t.true((await events.page('ingest-session', { reason: x.reasons[0]! }, { order: 'asc', limit: 10 })).some((y) => y.telemetryId === x.telemetryId));
  });
});

test('[postgres] a writer that waited for another computes its time marks from what that one committed', async (t) => {
  const fresh = freshDatabase('postgres');
  const db = await openDatabase(fresh.url);
  const holder = await db.knex.client.acquireConnection();
  try {
    const events = new KnexEventStore(db);
    const minute = 60_000;
    const start = Math.floor(Date.now() / minute) * minute - 60 * minute;
    // One facet for all three, so the queued batches have no new facet to commit first (that takes
    // the lock too, and would let them through one by one before their inserts).
    const [first] = generateEvents('lock', 1, start);
    const [early, late] = [{ ...first!, telemetryId: 'lock_early' }, { ...first!, telemetryId: 'lock_late' }];
    await events.insertBatch([first!]);
    // Another writer holds the writers' lock while two batches queue behind it: the first for a
    // new later minute, the second for an earlier one. When the lock passes from one to the other,
    // the second must see the first's minute, or that minute's running maximum would leave out
    // the second's event, and a range ending there would miss it.
    const schema = new URL(fresh.url).searchParams.get('schema')!;
    await db.knex.raw('BEGIN').connection(holder);
    await db.knex.raw('SELECT pg_advisory_xact_lock(?, ?)', [WRITER_LOCK_CLASS, hash32(schema)]).connection(holder);
    const waiting = async (n: number) => {
      for (let i = 0; i < 500; i++) {
        const [row] = (await db.knex.raw("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")).rows as { n: number }[];
        if (row!.n >= n) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`${n} writers never queued for the lock`);
    };
    const later = events.insertBatch([{ ...late, createdAt: start + 40 * minute }]);
    await waiting(1);
    const earlier = events.insertBatch([{ ...early, createdAt: start + 20 * minute }]);
    await waiting(2);
    await db.knex.raw('COMMIT').connection(holder);
    await Promise.all([later, earlier]);
    const upTo = await events.page('lock', { toMs: start + 41 * minute }, { order: 'asc', limit: 10 });
    t.deepEqual(upTo.map((e) => e.telemetryId).sort(), [early, late, first].map((e) => e!.telemetryId).sort());
    const from = await events.page('lock', { fromMs: start + 20 * minute }, { order: 'asc', limit: 10 });
    t.deepEqual(from.map((e) => e.telemetryId).sort(), [early, late].map((e) => e!.telemetryId).sort());
  } finally {
    db.knex.client.releaseConnection(holder);
    await db.close();
    await fresh.drop();
  }
});
