// createdAt is whole milliseconds; a from/to with digits past them is compared at full precision:
// from inclusive, to exclusive, as README says, not cut to the millisecond.
import test from 'ava';
import { get, startTps } from '../helpers/tps.js';
import { generateEvents, query } from './helpers.js';

test('from and to with a part of a millisecond keep and drop exactly what they would at full precision', async (t) => {
  const tps = await startTps();
  t.teardown(() => tps.close());
  const at = Date.UTC(2025, 2, 1, 10, 0, 0, 123);
  const [event] = generateEvents(tps.environment, 1, at);
  await tps.tps.events.insertBatch([event!]);
  const ids = async (params: Record<string, string>) => {
    const res = await get(`${tps.url}/api/events?${query(params)}`, tps.secretKey);
    t.is(res.status, 200, `${JSON.stringify(params)}: ${JSON.stringify(res.body)}`);
    return res.body.events.map((e: { telemetryId: string }) => e.telemetryId);
  };
  const id = event!.telemetryId;
  t.is(new Date(at).toISOString(), '2025-03-01T10:00:00.123Z');

  // 10:00:00.123 is before .1235 and .123000001: to (exclusive) keeps it.
  t.deepEqual(await ids({ to: '2025-03-01T10:00:00.1235Z' }), [id]);
  t.deepEqual(await ids({ to: '2025-03-01T10:00:00.123000001Z' }), [id]);
  t.deepEqual(await ids({ to: '2025-03-01T10:00:00.123Z' }), []);
  t.deepEqual(await ids({ to: '2025-03-01T10:00:00.1230Z' }), [], 'zeros past the millisecond are no part of one');
  // ...and from (inclusive) drops it.
  t.deepEqual(await ids({ from: '2025-03-01T10:00:00.1235Z' }), []);
  t.deepEqual(await ids({ from: '2025-03-01T11:00:00.123000001+01:00' }), []);
  t.deepEqual(await ids({ from: '2025-03-01T10:00:00.123Z' }), [id]);
  t.deepEqual(await ids({ from: '2025-03-01T10:00:00.1229Z' }), [id]);

  // A range inside one millisecond holds no event, and is no error; to before from still is.
  t.deepEqual(await ids({ from: '2025-03-01T10:00:00.1231Z', to: '2025-03-01T10:00:00.1239Z' }), []);
  const reversed = await get(`${tps.url}/api/events?${query({ from: '2025-03-01T10:00:00.1239Z', to: '2025-03-01T10:00:00.1231Z' })}`, tps.secretKey);
  t.is(reversed.status, 400);
  t.deepEqual(reversed.body.error.details, [{ path: 'to', message: 'to must be later than from' }]);
});
