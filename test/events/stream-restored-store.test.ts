// A store restored from a backup (or PITR), or cloned from another, keeps its cursors' secret, so a
// cursor issued after the backup still decodes. Its seq is past the sequence's high-water mark,
// which the restore rolled back: the store will issue those seqs again, and a stream resumed from
// it would skip every new event until the seqs passed it. It is refused with a 400; a cursor at or
// below the mark resumes (retention's case: stream-after-retention.test.ts).
import test from 'ava';
import { openStream, query, serverCursors, streamedStore } from './helpers.js';

const PAST = 'is past the newest event this store has issued';

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a cursor past the sequence's mark (a restored store) is refused; one within it resumes`, async (t) => {
    const { current, environment, secretKey, ingest, ids, pruneAll: prune, restart } = await streamedStore(t, store, 3);
    let tps = current();
    const cursors = await serverCursors(tps);
    const oldest = cursors.decode(environment, ids[0]!)!;
    t.is(await tps.tps.events.issuedHead(), cursors.decode(environment, ids[2]!)!);

    // The restore: the two newer events were committed after the backup, so they are gone and the
    // mark stands at the oldest (retention's pass deletes the rows cleanly; it takes the oldest too).
    t.is(await prune(), 3);
    const knex = tps.tps.db.knex;
    if (store === 'sqlite') await knex.raw("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", [oldest]);
    else await knex.raw("SELECT setval(pg_get_serial_sequence('events', 'seq'), ?)", [oldest]);
    // A restored store is a new start.
    tps = await restart();
    t.is(await tps.tps.events.issuedHead(), oldest);

    // The newest id, issued after the "backup": refused, by header and by query.
    const refused = async (headers: Record<string, string>, params: Record<string, string>, path: string) => {
      const res = await fetch(`${current().url}/api/events/stream?${query(params)}`, { headers: { authorization: `Bearer ${secretKey}`, ...headers } });
      t.is(res.status, 400, path);
      const body = (await res.json()) as { error: { code: string; details: { path: string; message: string }[] } };
      t.is(body.error.code, 'invalid_request');
      t.is(body.error.details[0]!.path, path);
      t.is(body.error.details[0]!.message, `${path} ${PAST}`);
    };
    await refused({ 'last-event-id': ids[2]! }, {}, 'Last-Event-ID');
    await refused({}, { cursor: ids[2]! }, 'cursor');
    await refused({}, { cursor: ids[1]! }, 'cursor');

    // The oldest id is within the mark: the stream resumes, and the next event (the seq the newer
    // cursors named, issued again) reaches it.
    const resumed = await openStream(tps.url, secretKey, {}, ids[0]!);
    try {
      t.is(resumed.status, 200);
      if (resumed.status !== 200) return;
      const next = await ingest();
      const got = (await resumed.take(1))[0]!;
      t.is(got.event.telemetryId, next);
      t.is(cursors.decode(environment, got.id), oldest + 1, 'the restored store issues the seq again');
    } finally {
      resumed.close();
    }

    // The list keeps its clamp: a cursor past the head lists what is stored before it.
    const list = await fetch(`${tps.url}/api/events?${query({ cursor: ids[2]! })}`, { headers: { authorization: `Bearer ${secretKey}` } });
    t.is(list.status, 200);
    t.is(((await list.json()) as { events: unknown[] }).events.length, 1);
  });
}
