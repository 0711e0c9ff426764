import test from 'ava';
import type { DecisionEvent } from '../../src/api/types.js';
import { get, startTps, type RunningTps } from '../helpers/tps.js';
import { generateEvents } from './helpers.js';

// from/to with a `+hh:mm` offset written into the URL as the README shows it, over real HTTP: the
// query string decodes its `+` as a space, which in that one place can only be the offset's sign.

let server: RunningTps;
let base: number;

test.before(async () => {
  server = await startTps();
  // Five events one second apart, from a whole second an hour ago.
  base = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
  await server.tps.events.insertBatch(generateEvents(server.environment, 5, base));
});
test.after.always(() => server?.close());

/** The instant written at +01:00, as a local formatter would: 2025-03-01T10:30:00+01:00. */
const plusOne = (ms: number) => new Date(ms + 3_600_000).toISOString().replace(/\.\d{3}Z$/, '+01:00');

// The `+` goes out as written, as curl sends it (fetch does not encode it).
const events = (query: string) => get(`${server.url}/api/events?${query}`, server.secretKey);
const ids = (body: { events: DecisionEvent[] }) => body.events.map((e) => e.telemetryId).sort();

test('from and to with a +hh:mm offset, unencoded in the URL, select what their Z forms select', async (t) => {
  const from = plusOne(base + 1000);
  const to = plusOne(base + 3000);
  t.true(new URL(`${server.url}/api/events?from=${from}`).search.endsWith('+01:00'));
  const plain = await events(`from=${from}&to=${to}`);
  t.is(plain.status, 200, JSON.stringify(plain.body));
  const encoded = await events(`from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
  t.is(encoded.status, 200);
  t.deepEqual(ids(plain.body), ids(encoded.body));
  t.deepEqual(ids(plain.body), [`gen_${server.environment}_1`, `gen_${server.environment}_2`]);

  // The compact offset and a fraction of a second too.
  const compact = await events(`from=${from.replace('+01:00', '.000+0100')}`);
  t.is(compact.status, 200, JSON.stringify(compact.body));
  t.is(compact.body.events.length, 4);
});

test('the stream takes the same form', async (t) => {
  const res = await fetch(`${server.url}/api/events/stream?from=${plusOne(base)}`, { headers: { authorization: `Bearer ${server.secretKey}` } });
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /text\/event-stream/);
  await res.body?.cancel();
});

test('a space anywhere but before the offset is still refused, naming the parameter', async (t) => {
  const at = plusOne(base);
  const date = at.slice(0, 10);
  for (const bad of [at.replace('T', '+'), at.replace('+01:00', '++01:00'), at.replace('+01:00', '+01:00+'), at.replace('+01:00', '+Z'), `${date}+01:00`, `${date}+`]) {
    const res = await events(`from=${bad}`);
    t.is(res.status, 400, bad);
    t.is(res.body.error.details[0].path, 'from', bad);
  }
});
