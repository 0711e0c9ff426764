import test from 'ava';
import { freshDatabase, get, post, startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';
import { ingestRecord } from './helpers.js';

// Concurrent ingests wait this long for each other, so the test's requests share one batch.
const BATCHED = { TPS_COMMIT_MAX_DELAY_MS: '300' };

const ingest = (tps: RunningTps, body: unknown) => post(`${tps.url}/api/events/ingest`, body, tps.secretKey);

test('[postgres] with bytea_output=escape, a repeated ingest is a duplicate, and new events batched with it are stored and answered 201', async (t) => {
  const fresh = freshDatabase('postgres');
  let tps: RunningTps | undefined;
  try {
    // A connection option, as a role or database setting would give every session: to_jsonb then renders bytea as escapes.
    tps = await startTps({ databaseUrl: `${fresh.url}&options=${encodeURIComponent('-c bytea_output=escape')}`, env: BATCHED });
    t.is(((await tps.tps.db.knex.raw('SHOW bytea_output')).rows as { bytea_output: string }[])[0]!.bytea_output, 'escape');
    const record = ingestRecord();
    t.is((await ingest(tps, record)).status, 201);
    const fresher = ingestRecord();
    const [again, stored] = await Promise.all([ingest(tps, record), ingest(tps, fresher)]);
    t.deepEqual([again.status, again.body], [200, { telemetryId: record.telemetryId, stored: false, duplicate: true }]);
    t.deepEqual([stored.status, stored.body], [201, { telemetryId: fresher.telemetryId, stored: true }]);
    t.is((await get(`${tps.url}/api/events/${fresher.telemetryId}`, tps.secretKey)).status, 200);
    t.is((await ingest(tps, { ...record, score: 1 })).body.error?.code, 'telemetry_id_conflict', 'the stored content is read right');
  } finally {
    await tps?.close();
    await fresh.drop();
  }
});

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] a taken event that cannot be read back fails only the repeat of it; the events committed in its batch are answered 201`, async (t) => {
    const tps = await startTps({ store, env: BATCHED });
    try {
      const record = ingestRecord();
      t.is((await ingest(tps, record)).status, 201);
      // As a later version's format would read to this one: the first byte names no known codec.
      await tps.tps.db.knex('events').where({ environment: tps.environment, telemetry_id: record.telemetryId }).update({ explanation_z: Buffer.of(0x7f, 1, 2, 3) });
      const fresher = ingestRecord();
      const [again, stored] = await Promise.all([ingest(tps, record), ingest(tps, fresher)]);
      t.is(again.status, 503);
      t.is(again.body.error.code, 'store_unavailable');
      t.deepEqual([stored.status, stored.body], [201, { telemetryId: fresher.telemetryId, stored: true }]);
      t.is((await ingest(tps, fresher)).status, 200, 'and it is stored');
    } finally {
      await tps.close();
    }
  });
}
