import test from 'ava';
import { post, startTps } from '../helpers/tps.js';
import { ingestRecord, newEnvironment, query, serverCursors } from './helpers.js';

// A key cannot forge a cursor (events/cursor.ts), but the store does not count on it: one far past
// the newest event (made here with the server's secret) must cost what a first page costs, on
// every read path (identifier, facet, both, none).

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a cursor far past the newest event answers at once with the page from the newest, whatever the filters`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const { environment, secretKey } = await newEnvironment(tps);
    const FORGED = (await serverCursors(tps)).encode(environment, Number.MAX_SAFE_INTEGER);
    // Ingested one by one, so their order is the store's.
    const records = [ingestRecord(), ingestRecord({ resourceId: 'inv_2' }), ingestRecord({ decision: 'allow' }), ingestRecord({ actorId: 'user_8' })];
    for (const r of records) t.is((await post(`${tps.url}/api/events/ingest`, r, secretKey)).status, 201);
    const list = async (params: Record<string, string | number | undefined>) => {
      // A regression walks empty chunks for hours: the request fails rather than hang the test.
      const res = await fetch(`${tps.url}/api/events?${query(params)}`, { headers: { authorization: `Bearer ${secretKey}` }, signal: AbortSignal.timeout(10_000) });
      t.is(res.status, 200, JSON.stringify(params));
      return (await res.json()) as { events: { telemetryId: string }[]; nextCursor: string | null };
    };
    const ids = (...i: number[]) => i.map((n) => records[n]!.telemetryId);
    const cases: [Record<string, string>, string[]][] = [
      [{ actorId: 'user_7' }, ids(2, 1, 0)],
      [{ resourceId: 'inv_1' }, ids(3, 2, 0)],
      [{ actorId: 'user_7', decision: 'deny' }, ids(1, 0)],
      [{ actorId: 'user_9' }, []],
      [{ decision: 'deny' }, ids(3, 1, 0)],
      [{}, ids(3, 2, 1, 0)],
    ];
    for (const [filter, expected] of cases) {
      const page = await list({ ...filter, cursor: FORGED });
      t.deepEqual(page.events.map((e) => e.telemetryId), expected, JSON.stringify(filter));
      t.is(page.nextCursor, null);
    }
    // Paging on from it reaches the end.
    const first = await list({ actorId: 'user_7', limit: 2, cursor: FORGED });
    t.deepEqual(first.events.map((e) => e.telemetryId), ids(2, 1));
    const second = await list({ actorId: 'user_7', limit: 2, cursor: first.nextCursor! });
    t.deepEqual(second.events.map((e) => e.telemetryId), ids(0));
    t.is(second.nextCursor, null);
  });
}
