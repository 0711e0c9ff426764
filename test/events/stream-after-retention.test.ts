// A genuine cursor can be past the newest stored event: retention deleted the events up to it
// (here, all of them). Retention leaves the sequence's high-water mark in place, so the cursor is
// within it and the stream resumes from it, before and after a restart, and sends what is committed
// next; the Decision Logs answer what is stored before it. (Past the mark: stream-restored-store.test.ts.)
import test from 'ava';
import { openStream, query, serverCursors, streamedStore } from './helpers.js';

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a stream resumes from the newest event's id after retention deleted every event, across a restart`, async (t) => {
    const { current, environment, secretKey, ingest, ids, pruneAll: prune, restart } = await streamedStore(t, store, 3);
    let tps = current();
    // The newest event's id, as a stream sent it.
    const newestId = ids[2]!;

    t.is(await prune(), 3);
    t.is(await tps.tps.events.count(environment), 0);
    // The newest stored event is gone, the mark is not.
    t.true((await tps.tps.events.head()) < (await tps.tps.events.issuedHead()));

    const resume = async (label: string) => {
      const byHeader = await openStream(current().url, secretKey, {}, newestId);
      const byQuery = await openStream(current().url, secretKey, { cursor: newestId });
      try {
        t.is(byHeader.status, 200, `${label}: Last-Event-ID`);
        t.is(byQuery.status, 200, `${label}: ?cursor=`);
        // A refused stream would never deliver: fail rather than wait.
        if (byHeader.status !== 200 || byQuery.status !== 200) return;
        const next = await ingest();
        t.is((await byHeader.take(1))[0]!.event.telemetryId, next, label);
        t.is((await byQuery.take(1))[0]!.event.telemetryId, next, label);
      } finally {
        byHeader.close();
        byQuery.close();
      }
    };
    await resume('same process');

    // Emptied again, then a restart: the new process's reader starts at the empty store's head, below the cursor.
    await prune();
    t.is(await tps.tps.events.count(), 0, 'the store is empty');
    tps = await restart();
    await resume('after a restart');

    // The list answers the events stored before it: none are left.
    const list = await fetch(`${tps.url}/api/events?${query({ cursor: newestId })}`, { headers: { authorization: `Bearer ${secretKey}` } });
    t.is(list.status, 200);
    t.deepEqual(((await list.json()) as { events: unknown[] }).events, []);

    // Still refused: another environment's cursor, however far past the head.
    const other = (await serverCursors(tps)).encode('elsewhere', (await tps.tps.events.head()) + 5);
    const refused = await fetch(`${tps.url}/api/events/stream`, { headers: { authorization: `Bearer ${secretKey}`, 'last-event-id': other } });
    t.is(refused.status, 400);
    const body = (await refused.json()) as { error: { code: string; details: { path: string }[] } };
    t.is(body.error.code, 'invalid_request');
    t.is(body.error.details[0]!.path, 'Last-Event-ID');
  });
}
