// A stream tells its client where it stands before any event matches: its opening block carries the
// position as an `id:`, and a heartbeat carries the position once it has moved. A client that drops
// before its first matching event resumes from there and misses nothing committed while it was away.
import test from 'ava';
import { post, startTps, type RunningTps } from '../helpers/tps.js';
import { ingestRecord, openStream, query, serverCursors } from './helpers.js';

/** GET /api/events/stream read as raw SSE blocks (the text up to each blank line), as they are on the wire. */
async function rawStream(tps: RunningTps, params: Record<string, string> = {}) {
  const abort = new AbortController();
  const res = await fetch(`${tps.url}/api/events/stream?${query(params)}`, { headers: { authorization: `Bearer ${tps.secretKey}` }, signal: abort.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  return {
    status: res.status,
    async nextBlock(): Promise<string> {
      let end: number;
      while ((end = text.indexOf('\n\n')) < 0) {
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        text += value;
      }
      const block = text.slice(0, end);
      text = text.slice(end + 2);
      return block;
    },
    close: () => abort.abort(),
  };
}

const idOf = (block: string): string | undefined => /^id: (.*)$/m.exec(block)?.[1];

async function ingest(tps: RunningTps, decision: 'allow' | 'deny'): Promise<string> {
  const record = ingestRecord({ decision });
  const res = await post(`${tps.url}/api/events/ingest`, record, tps.secretKey);
  if (res.status !== 201) throw new Error(`ingest answered ${res.status}`);
  return record.telemetryId;
}

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] a stream opened without a cursor says where it starts; resumed from there, it sends what was committed in the gap`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const before = await ingest(tps, 'deny');

    const first = await rawStream(tps, { decision: 'deny' });
    t.is(first.status, 200);
    const opening = await first.nextBlock();
    first.close();
    const id = idOf(opening);
    t.truthy(id, `the opening block has no id: ${JSON.stringify(opening)}`);
    t.is((await serverCursors(tps)).decode(tps.environment, id!), await tps.tps.events.head(), 'the position is the head: the event before the connection is behind it');

    // Committed while no stream was open.
    const inGap = await ingest(tps, 'deny');
    const resumed = await openStream(tps.url, tps.secretKey, { decision: 'deny' }, id);
    try {
      t.is(resumed.status, 200);
      const [got] = await resumed.take(1);
      t.is(got!.event.telemetryId, inGap);
      t.not(got!.event.telemetryId, before);
    } finally {
      resumed.close();
    }
  });
}

test('a quiet stream: a heartbeat carries the position once events it does not match have moved it, and a resume from there passes', async (t) => {
  const tps = await startTps({ env: { TPS_STREAM_HEARTBEAT_MS: '100', TPS_STREAM_POLL_MS: '20' } });
  t.teardown(() => tps.close());
  const stream = await rawStream(tps, { decision: 'deny' });
  let moved: string | undefined;
  const cursors = await serverCursors(tps);
  try {
    const opening = idOf(await stream.nextBlock());
    for (let i = 0; i < 3; i++) await ingest(tps, 'allow');
    const head = await tps.tps.events.head();
    // Heartbeats until one names the head (one may come before the hub has read the events).
    for (let beats = 0; cursors.decode(tps.environment, moved ?? '') !== head; beats++) {
      if (beats === 30) return t.fail(`30 heartbeats and none named the head (${head})`);
      const block = await stream.nextBlock();
      t.regex(block, /^(id: \S+\n)?: heartbeat$/);
      moved = idOf(block) ?? moved;
    }
    t.not(moved, opening);
    // A position already told is not told again.
    t.is(await stream.nextBlock(), ': heartbeat');
  } finally {
    stream.close();
  }
  const denied = await ingest(tps, 'deny');
  const resumed = await openStream(tps.url, tps.secretKey, { decision: 'deny' }, moved);
  try {
    t.is(resumed.status, 200, 'the position is no cursor past the newest event');
    t.is((await resumed.take(1))[0]!.event.telemetryId, denied);
  } finally {
    resumed.close();
  }
});
