import test from 'ava';
import { newTelemetryId } from '../../src/evaluate/telemetryId.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('telemetryIds are UUID version 7: unique, carrying their time, sorting by it', (t) => {
  const start = Date.UTC(2026, 10, 22, 5, 0, 0);
  const ids = Array.from({ length: 2000 }, (_, i) => newTelemetryId(start + Math.floor(i / 10)));
  for (const id of ids) t.regex(id, UUID_V7);
  t.is(new Set(ids).size, ids.length);
  t.is(parseInt(ids[0]!.replace(/-/g, '').slice(0, 12), 16), start);
  const byTime = ids.filter((_, i) => i % 10 === 0);
  t.deepEqual([...byTime].sort(), byTime);
});
