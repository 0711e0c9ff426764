// Environments are isolated (CONTRACT), but the store's seq counts every environment's events. A
// cursor (a page's nextCursor, a stream's id) must therefore tell one environment's key nothing of
// the others' writes, and must not be forgeable, or a key could find its own events' seqs by trial.
import crypto from 'node:crypto';
import type { ExecutionContext } from 'ava';
import test from 'ava';
import { freshDatabase, get, post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord, newEnvironment, openStream, query } from './helpers.js';

async function ingest(t: ExecutionContext, tps: RunningTps, key: string): Promise<string> {
  const record = ingestRecord();
  t.is((await post(`${tps.url}/api/events/ingest`, record, key)).status, 201);
  return record.telemetryId;
}

const page = (tps: RunningTps, key: string, cursor?: string) => get(`${tps.url}/api/events?${query({ limit: 1, cursor })}`, key);

/** GET /api/events/stream resumed from a cursor: its status and, when it is an ordinary answer, its body (a stream that started is dropped). */
async function resume(tps: RunningTps, key: string, how: { cursor: string } | { lastEventId: string }) {
  const abort = new AbortController();
  const res = await fetch(`${tps.url}/api/events/stream?${'cursor' in how ? query({ cursor: how.cursor }) : ''}`, {
    headers: { authorization: `Bearer ${key}`, ...('lastEventId' in how ? { 'last-event-id': how.lastEventId } : {}) },
    signal: abort.signal,
  });
  const body = (res.headers.get('content-type') ?? '').startsWith('application/json') ? ((await res.json()) as { error: { code: string; details: { path: string }[] } }) : undefined;
  abort.abort();
  return { status: res.status, body };
}

/** Every number B could read out of its own cursor's bytes: decimal digits as text, and unsigned integers at each offset. */
function readings(cursor: string): Map<string, bigint[]> {
  const bytes = Buffer.from(cursor, 'base64url');
  const at = (width: number, read: (offset: number) => bigint) => Array.from({ length: Math.max(0, bytes.length - width + 1) }, (_, i) => read(i));
  return new Map([
    ['decimal digits', [...bytes.toString('latin1').matchAll(/\d+/g)].map((m) => BigInt(m[0]))],
    ['uint32 big-endian', at(4, (i) => BigInt(bytes.readUInt32BE(i)))],
    ['uint32 little-endian', at(4, (i) => BigInt(bytes.readUInt32LE(i)))],
    ['uint64 big-endian', at(8, (i) => bytes.readBigUInt64BE(i))],
    ['uint64 little-endian', at(8, (i) => bytes.readBigUInt64LE(i))],
  ]);
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a cursor of another environment, a forged one or an "e1." one is a 400 naming cursor or Last-Event-ID; the environment's own resumes`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const a = await newEnvironment(tps);
    const b = await newEnvironment(tps);
    const streamA = await openStream(tps.url, a.secretKey);
    let idOfA: string;
    try {
      for (let i = 0; i < 3; i++) {
        await ingest(t, tps, a.secretKey);
        await ingest(t, tps, b.secretKey);
      }
      idOfA = (await streamA.take(1))[0]!.id;
    } finally {
      streamA.close();
    }
    const cursorOfA = (await page(tps, a.secretKey)).body.nextCursor as string;
    const cursorOfB = (await page(tps, b.secretKey)).body.nextCursor as string;
    t.regex(cursorOfB, /^[A-Za-z0-9_-]{22}$/);

    // B's own cursor goes on in B, as a page and as a stream.
    const own = await page(tps, b.secretKey, cursorOfB);
    t.is(own.status, 200);
    t.is(own.body.events.length, 1);
    t.is((await resume(tps, b.secretKey, { lastEventId: cursorOfB })).status, 200);
    // The old form, naming a seq B really has, and a random one of the new form.
    const seq = (await tps.tps.events.get(b.environment, own.body.events[0].telemetryId))!.seq;
    const oldForm = Buffer.from(`e1.${seq}`).toString('base64url');
    const forged = crypto.randomBytes(16).toString('base64url');

    for (const [what, cursor] of [
      ["A's nextCursor", cursorOfA],
      ["A's stream id", idOfA],
      ['an "e1." cursor', oldForm],
      ['a forged cursor', forged],
    ] as const) {
      const listed = await page(tps, b.secretKey, cursor);
      t.is(listed.status, 400, `${what}: GET /api/events`);
      t.is(listed.body.error?.code, 'invalid_request', what);
      t.deepEqual(listed.body.error?.details?.map((d: { path: string }) => d.path), ['cursor'], what);
      for (const [how, path] of [
        [{ cursor }, 'cursor'],
        [{ lastEventId: cursor }, 'Last-Event-ID'],
      ] as const) {
        const streamed = await resume(tps, b.secretKey, how);
        t.is(streamed.status, 400, `${what}: the stream by ${path}`);
        t.is(streamed.body?.error.code, 'invalid_request', what);
        t.is(streamed.body?.error.details[0]!.path, path, what);
      }
    }
    // A's cursors still serve A.
    t.is((await page(tps, a.secretKey, cursorOfA)).status, 200);
    t.is((await page(tps, a.secretKey, idOfA)).status, 200);
  });

  test(`[${store}] an environment's cursors and stream ids say nothing of how many events another environment wrote`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const a = await newEnvironment(tps);
    const b = await newEnvironment(tps);
    const stream = await openStream(tps.url, b.secretKey);
    try {
      const first = await ingest(t, tps, b.secretKey);
      for (let i = 0; i < 40; i++) await ingest(t, tps, a.secretKey);
      const second = await ingest(t, tps, b.secretKey);
      const [m1, m2] = await stream.take(2);
      t.deepEqual([m1!.event.telemetryId, m2!.event.telemetryId], [first, second]);
      // A stream's id is the cursor a page gives for the same event.
      t.is((await page(tps, b.secretKey)).body.nextCursor, m2!.id);

      const seqOf = async (telemetryId: string) => (await tps.tps.events.get(b.environment, telemetryId))!.seq;
      const gap = BigInt((await seqOf(second)) - (await seqOf(first)));
      t.is(gap, 41n, "A's 40 events lie between B's two");
      // Whatever B reads out of its two ids, no difference of them is the gap.
      const before = readings(m1!.id);
      const after = readings(m2!.id);
      for (const [reading, values] of after) {
        values.forEach((v, i) => {
          const w = before.get(reading)![i];
          if (w !== undefined) t.not(v - w, gap, `${reading} #${i} of ${m1!.id} and ${m2!.id}`);
        });
      }
    } finally {
      stream.close();
    }
  });

  test(`[${store}] a cursor outlives a restart and serves every server on the store`, async (t) => {
    const fresh = freshDatabase(store);
    t.teardown(() => fresh.drop());
    const first = await startTps({ databaseUrl: fresh.url });
    let cursor: string;
    let next: string;
    try {
      for (let i = 0; i < 3; i++) await ingest(t, first, first.secretKey);
      cursor = (await page(first, first.secretKey)).body.nextCursor;
      next = (await page(first, first.secretKey, cursor)).body.nextCursor;
    } finally {
      await first.close();
    }
    // Restarted; with PostgreSQL, alongside another server on the store: the same cursors.
    const servers: RunningTps[] = [];
    t.teardown(() => Promise.all(servers.map((s) => s.close())));
    servers.push(await startTps({ databaseUrl: fresh.url }));
    if (store === 'postgres') servers.push(await startTps({ databaseUrl: fresh.url }));
    for (const tps of servers) {
      t.is((await page(tps, tps.secretKey)).body.nextCursor, cursor, 'issued alike');
      const resumed = await page(tps, tps.secretKey, cursor);
      t.is(resumed.status, 200, 'accepted');
      t.is(resumed.body.nextCursor, next);
    }
  });
}
