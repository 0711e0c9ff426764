// A row whose explanation this version cannot decode (a newer TPS's format during a rolling upgrade,
// a damaged blob) is answered with `explanation: null` and `explanationUnreadable: true`, every
// other field as stored: it stops neither the live streams of any environment, nor paging past it,
// nor an export, and it is logged once, by its ids.
import test from 'ava';
import type { LoggedEvent } from '../../src/api/types.js';
import type { RunningTps } from '../helpers/tps.js';
import { capturedLogs, get, post, startTps } from '../helpers/tps.js';
import { runCli } from '../helpers/cli.js';
import { generateEvents, ingestRecord, newEnvironment, openStream } from './helpers.js';

/** Within this a stream delivers an event committed now; past it the test fails rather than hangs. */
const DEADLINE_MS = 20_000;

async function within<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: nothing within ${DEADLINE_MS} ms`)), DEADLINE_MS)));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Makes the stored explanation's first byte 9, a format no version knows. */
async function damage(tps: RunningTps, environment: string, telemetryId: string): Promise<void> {
  const knex = tps.tps.db.knex;
  const row = knex('events').where({ environment, telemetry_id: telemetryId });
  if (tps.tps.db.dialect === 'postgres') await row.update({ explanation_z: knex.raw('set_byte(explanation_z, 0, 9)') });
  else await row.update({ explanation_z: knex.raw(`CAST(X'09' || substr(explanation_z, 2) AS BLOB)`) });
}

for (const store of ['sqlite', 'postgres'] as const) {
  test.serial(`[${store}] an undecodable explanation in one environment: another's stream goes on, its own list, event, stream and export answer it marked`, async (t) => {
    const { logger, lines } = capturedLogs('warn');
    // The timer never fires during the test: the hub reads when an ingest commits.
    const tps = await startTps({ store, logger, env: { TPS_STREAM_POLL_MS: '600000' } });
    t.teardown(() => tps.close());
    const a = await newEnvironment(tps);
    const b = await newEnvironment(tps);
    const readable = ingestRecord();
    t.is((await post(`${tps.url}/api/events/ingest`, readable, a.secretKey)).status, 201);

    const streamB = await openStream(tps.url, b.secretKey);
    const streamA = await openStream(tps.url, a.secretKey);
    t.teardown(() => {
      streamA.close();
      streamB.close();
    });
    t.is(streamB.status, 200);
    t.is(streamA.status, 200);

    // Written past the hub's head without waking it, then damaged: the next commit's read meets it.
    const [bad] = generateEvents(a.environment, 1, Date.now());
    await tps.tps.events.insertBatch([bad!]);
    await damage(tps, a.environment, bad!.telemetryId);
    const next = ingestRecord();
    t.is((await post(`${tps.url}/api/events/ingest`, next, b.secretKey)).status, 201);

    const [fromB] = await within("B's stream", streamB.take(1));
    t.is(fromB!.event.telemetryId, next.telemetryId);
    const [fromA] = await within("A's stream", streamA.take(1));
    const streamed = fromA!.event as LoggedEvent;
    t.is(streamed.telemetryId, bad!.telemetryId);
    t.is(streamed.explanation, null);
    t.true('explanationUnreadable' in streamed && streamed.explanationUnreadable);

    const list = await get(`${tps.url}/api/events?limit=1`, a.secretKey);
    t.is(list.status, 200, JSON.stringify(list.body));
    const [marked] = list.body.events;
    t.is(marked.telemetryId, bad!.telemetryId);
    t.is(marked.explanation, null);
    t.true(marked.explanationUnreadable);
    t.is(marked.actorId, bad!.actorId, 'the other fields as stored');
    t.deepEqual(marked.reasons, bad!.reasons);
    // Paging goes on past it.
    const older = await get(`${tps.url}/api/events?cursor=${list.body.nextCursor}`, a.secretKey);
    t.is(older.status, 200);
    t.deepEqual(
      older.body.events.map((e: { telemetryId: string }) => e.telemetryId),
      [readable.telemetryId],
    );
    t.truthy(older.body.events[0].explanation);
    t.is(older.body.events[0].explanationUnreadable, undefined);

    const one = await get(`${tps.url}/api/events/${bad!.telemetryId}`, a.secretKey);
    t.is(one.status, 200);
    t.true(one.body.explanationUnreadable);

    const exported = await runCli(['events', 'export', '--env', a.environment], { DATABASE_URL: tps.databaseUrl, LOG_LEVEL: 'silent' });
    t.is(exported.code, 0, exported.stderr);
    const rows = exported.stdout.trim().split('\n').map((l) => JSON.parse(l) as { telemetryId: string; explanationUnreadable?: boolean });
    t.deepEqual(
      rows.map((e) => [e.telemetryId, e.explanationUnreadable ?? false]),
      [
        [readable.telemetryId, false],
        [bad!.telemetryId, true],
      ],
    );

    // Read by the hub, the list, the page after it and the lookup: logged once, by its ids alone.
    const logged = lines.filter((l) => l.includes(bad!.telemetryId));
    t.is(logged.length, 1, logged.join(''));
    const entry = JSON.parse(logged[0]!);
    t.is(entry.environment, a.environment);
    t.is(entry.format, 9);
    t.false(logged[0]!.includes(bad!.actorId), 'no content of the event');
  });
}
