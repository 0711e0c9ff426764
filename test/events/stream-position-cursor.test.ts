// A stream's opening id (and a heartbeat's) names a position: every event up to it was committed
// before. Given to GET /api/events it lists those events, the newest included; an event's id lists
// the events before that event. The stream resumes after either.
import test from 'ava';
import { get, post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord, openStream } from './helpers.js';

/** The id of a stream's opening block, read off the wire (it carries no data, so no message holds it). */
async function openingId(tps: RunningTps): Promise<string> {
  const abort = new AbortController();
  const res = await fetch(`${tps.url}/api/events/stream`, { headers: { authorization: `Bearer ${tps.secretKey}` }, signal: abort.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  try {
    while (!text.includes('\n\n')) {
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended before its opening block');
      text += value;
    }
  } finally {
    abort.abort();
  }
  const id = /^id: (.*)$/m.exec(text.slice(0, text.indexOf('\n\n')))?.[1];
  if (id === undefined) throw new Error(`the opening block has no id: ${JSON.stringify(text)}`);
  return id;
}

async function ingest(tps: RunningTps): Promise<string> {
  const record = ingestRecord();
  const res = await post(`${tps.url}/api/events/ingest`, record, tps.secretKey);
  if (res.status !== 201) throw new Error(`ingest answered ${res.status}`);
  return record.telemetryId;
}

const listed = async (tps: RunningTps, cursor: string): Promise<string[]> => {
  const res = await get(`${tps.url}/api/events?cursor=${cursor}`, tps.secretKey);
  if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.events.map((e: { telemetryId: string }) => e.telemetryId);
};

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] the opening id as a list cursor lists every event from before the stream, the newest included`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const e1 = await ingest(tps);
    const e2 = await ingest(tps);
    const opening = await openingId(tps);
    t.deepEqual(await listed(tps, opening), [e2, e1]);

    // An event's id still lists only what is before it, and a stream resumes after either id.
    const e3 = await ingest(tps);
    const resumed = await openStream(tps.url, tps.secretKey, {}, opening);
    try {
      t.is(resumed.status, 200);
      const [got] = await resumed.take(1);
      t.is(got!.event.telemetryId, e3);
      t.deepEqual(await listed(tps, got!.id), [e2, e1]);
    } finally {
      resumed.close();
    }
  });
}
