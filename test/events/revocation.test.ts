// A revoked key's Event Stream ends (CONTRACT: 401 for a revoked key): checked again before events
// go out and at each heartbeat, not only at connect. Real server, real store, real revocation.
import test from 'ava';
import { createKeyPair } from '../../src/auth/keys.js';
import { parseSse, type SseItem } from '../../src/events/sseParser.js';
import { samples } from '../core/evaluate-suite.js';
import { runCli } from '../helpers/cli.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';
import { uid } from './helpers.js';

const REVOKED = 'invalid_api_key: the API key is unknown or revoked';

/** A stream read to its end: every item as it arrives, and a promise settled when the server ends it. */
async function follow(url: string, key: string) {
  const abort = new AbortController();
  const res = await fetch(`${url}/api/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: abort.signal });
  const items: SseItem[] = [];
  let done = false;
  let taken = 0;
  let arrived: () => void = () => undefined;
  const ended = (async () => {
    try {
      for await (const item of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
        items.push(item);
        arrived();
      }
    } catch {
      /* closed by the test */
    } finally {
      done = true;
      arrived();
    }
  })();
  const messages = () => items.filter((i): i is Extract<SseItem, { kind: 'message' }> => i.kind === 'message');
  const until = async (ready: () => boolean) => {
    while (!ready()) {
      if (done) throw new Error('the stream ended');
      await new Promise<void>((resolve) => (arrived = resolve));
    }
  };
  return {
    status: res.status,
    items,
    messages,
    ended,
    /** Whether the stream has ended (by the server, unless the test closed it). */
    done: () => done,
    until,
    /** The next message not yet taken. */
    async nextMessage() {
      await until(() => messages().length > taken);
      return JSON.parse(messages()[taken++]!.data) as { telemetryId: string };
    },
    close: () => abort.abort(),
  };
}

/** The stream of K delivers a first event, so it is live when K is revoked. */
async function liveStream(tps: RunningTps) {
  const environment = uid('env');
  const streamed = await createKeyPair(tps.tps.keyStore, environment);
  const other = await createKeyPair(tps.tps.keyStore, environment);
  const stream = await follow(tps.url, streamed.secretKey);
  const first = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), other.secretKey);
  return { streamed, other, stream, first: first.body.telemetryId as string };
}

test.serial('revoked through the CLI: the stream ends without the event committed after it, and the reconnect is 401', async (t) => {
  // The default heartbeat (15 s) does not fire during the test: the check before sending ends it.
  const tps = await startTps({ env: { TPS_KEY_CACHE_MS: '0' } });
  try {
    const { streamed, other, stream, first } = await liveStream(tps);
    t.is(stream.status, 200);
    t.is((await stream.nextMessage()).telemetryId, first);

    const cli = await runCli(['keys', 'revoke', streamed.secret.id], { DATABASE_URL: tps.databaseUrl });
    t.is(cli.code, 0, cli.stderr);
    const after = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), other.secretKey);
    t.is(after.status, 200, 'the environment goes on: only the key is revoked');

    // Whichever comes first: the stream ends, or it delivers the event committed after the revocation.
    await stream.until(() => stream.messages().length > 1).catch(() => undefined);
    t.deepEqual(stream.messages().map((m) => JSON.parse(m.data).telemetryId), [first], 'the event after the revocation was not delivered');
    t.true(stream.done(), 'the server ended the stream');
    t.deepEqual(stream.items.at(-1), { kind: 'comment', text: REVOKED });
    stream.close();

    const again = await fetch(`${tps.url}/api/events/stream`, { headers: { authorization: `Bearer ${streamed.secretKey}` } });
    t.is(again.status, 401);
    t.is(((await again.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
  } finally {
    await tps.close();
  }
});

test.serial('revoked in process: an idle stream ends at its next heartbeat', async (t) => {
  const tps = await startTps({ env: { TPS_STREAM_HEARTBEAT_MS: '100' } });
  try {
    const { streamed, stream, first } = await liveStream(tps);
    t.is((await stream.nextMessage()).telemetryId, first);
    const before = stream.items.length;
    t.true(await tps.tps.keys.revoke(streamed.secret.id));
    // A check already in flight may still pass one heartbeat; the next ends the stream.
    const heartbeatsSince = () => stream.items.slice(before).filter((i) => i.kind === 'comment' && i.text === 'heartbeat').length;
    await stream.until(() => heartbeatsSince() >= 3).catch(() => undefined);
    t.true(stream.done(), 'the server ended the stream');
    t.deepEqual(stream.items.at(-1), { kind: 'comment', text: REVOKED });
    t.is(stream.messages().length, 1);
    stream.close();
  } finally {
    await tps.close();
  }
});

test.serial('a stream whose key stands is not ended by the check', async (t) => {
  const tps = await startTps({ env: { TPS_STREAM_HEARTBEAT_MS: '100', TPS_KEY_CACHE_MS: '0' } });
  try {
    const { stream, other, first } = await liveStream(tps);
    t.is((await stream.nextMessage()).telemetryId, first);
    // Heartbeats keep coming, each after a fresh key lookup, and events still arrive.
    await stream.until(() => stream.items.filter((i) => i.kind === 'comment' && i.text === 'heartbeat').length >= 2);
    const next = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), other.secretKey);
    t.is((await stream.nextMessage()).telemetryId, next.body.telemetryId);
    stream.close();
  } finally {
    await tps.close();
  }
});
