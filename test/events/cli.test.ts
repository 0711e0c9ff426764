import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import test from 'ava';
import type { DecisionEvent } from '../../src/api/types.js';
import { exportEvents } from '../../src/events/export.js';
import type { EventFilter } from '../../src/store/eventFilter.js';
import type { KnexEventStore, PageOptions } from '../../src/store/eventStore.js';
import { post, REPO_ROOT, startTps, type StoreKind } from '../helpers/tps.js';
import { generateEvents, ingestRecord, newEnvironment } from './helpers.js';

// `tps events export` and `tps events tail`, run as the real CLI in a child process.

const CLI = `const { main } = await import(${JSON.stringify(path.join(REPO_ROOT, 'src/cli/index.ts'))}); process.exitCode = await main(process.argv.slice(1));`;

function tps(args: string[], env: Record<string, string>) {
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CLI, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = tps(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? -1)));
  return { code, stdout, stderr };
}

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] tps events export writes the matching events as NDJSON, oldest first, for one environment`, async (t) => {
    const server = await startTps({ store });
    try {
      const other = await newEnvironment(server);
      const mine = generateEvents(server.environment, 2600, Date.now() - 3_600_000);
      for (let i = 0; i < mine.length; i += 500) await server.tps.events.insertBatch(mine.slice(i, i + 500));
      await server.tps.events.insertBatch(generateEvents(other.environment, 300, Date.now() - 3_600_000));
      const env = { DATABASE_URL: server.databaseUrl, TPS_ENVIRONMENT: server.environment, LOG_LEVEL: 'silent' };

      const all = await run(['events', 'export'], env);
      t.is(all.code, 0, all.stderr);
      const lines = all.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as DecisionEvent);
      t.deepEqual(lines.map((e) => e.telemetryId), mine.map((e) => e.telemetryId));
      t.true(lines.every((e) => e.environment === server.environment && e.explanation !== undefined));
      t.regex(all.stderr, /exported 2600 events/);

      const filtered = await run(['events', 'export', '--decision', 'deny', '--reason', 'low_risk_operation', '--from', new Date(mine[100]!.createdAt).toISOString()], env);
      const expected = mine.filter((e, i) => i >= 100 && e.decision === 'deny' && e.reasons.includes('low_risk_operation')).map((e) => e.telemetryId);
      t.true(expected.length > 0);
      t.deepEqual(filtered.stdout.trimEnd().split('\n').map((l) => (JSON.parse(l) as DecisionEvent).telemetryId), expected);

      const otherEnv = await run(['events', 'export', '--env', other.environment, '--source', 'ingest'], env);
      t.is(otherEnv.stdout.trimEnd().split('\n').length, 75);

      const bad = await run(['events', 'export', '--riskBand', 'severe'], env);
      t.is(bad.code, 2);
      t.regex(bad.stderr, /riskBand must be one of/);
      t.is(bad.stdout, '');
    } finally {
      await server.close();
    }
  });

  test(`[${store}] tps events tail follows the live stream of a server with its filters`, async (t) => {
    const server = await startTps({ store });
    const child = tps(['events', 'tail', '--url', server.url, '--json', '--decision', 'deny'], { TPS_SECRET_KEY: server.secretKey });
    try {
      let stdout = '';
      let stderr = '';
      let wake = () => {};
      child.stdout.on('data', (d) => {
        stdout += d;
        wake();
      });
      child.stderr.on('data', (d) => (stderr += d));
      const shownLines = () => stdout.split('\n').filter(Boolean);
      /** Waits until the tail has printed n lines; undefined if `patienceMs` passes first. */
      const lines = (n: number, patienceMs = 60_000) =>
        new Promise<string[] | undefined>((resolve, reject) => {
          // However a wait ends, its timer and close listener go with it: the polling loop below
          // waits many times, and a tail that exits must not leave a minute's timer behind.
          const settle = (finish: () => void) => {
            clearTimeout(timer);
            child.off('close', exited);
            finish();
          };
          const exited = () => settle(() => reject(new Error(`tail exited: ${stderr}`)));
          const done = (result: string[] | undefined) => settle(() => resolve(result));
          const timer = setTimeout(() => done(undefined), patienceMs);
          wake = () => {
            if (shownLines().length >= n) done(shownLines());
          };
          child.once('close', exited);
          wake();
        });
      const expected: string[] = [];
      // The tail connects in the background: keep ingesting until it shows an event, then compare
      // from the first one it showed.
      let shown: string[] | undefined;
      while (!shown) {
        const record = ingestRecord({ decision: 'deny' });
        await post(`${server.url}/api/events/ingest`, ingestRecord({ decision: 'allow' }), server.secretKey);
        await post(`${server.url}/api/events/ingest`, record, server.secretKey);
        expected.push(record.telemetryId);
        shown = await lines(1, 200);
      }
      const start = expected.indexOf((JSON.parse(shown[0]!) as DecisionEvent).telemetryId);
      t.true(start >= 0);
      for (let i = 0; i < 5; i++) {
        const record = ingestRecord({ decision: 'deny' });
        await post(`${server.url}/api/events/ingest`, ingestRecord({ decision: 'throttle' }), server.secretKey);
        await post(`${server.url}/api/events/ingest`, record, server.secretKey);
        expected.push(record.telemetryId);
      }
      const all = (await lines(expected.length - start))!;
      t.deepEqual(all.map((l) => (JSON.parse(l) as DecisionEvent).telemetryId), expected.slice(start));
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      child.kill('SIGINT');
      t.is(await exited, 0);
    } finally {
      child.kill('SIGKILL');
      await server.close();
    }
  });
}

/**
 * A TCP proxy in front of `target` that a test can cut (every connection closed, new ones refused)
 * and restore, as a network would drop a stream. `opened(n)` settles once n streams have started
 * through it (their opening block has passed).
 */
async function cuttableProxy(target: string) {
  const sockets = new Set<net.Socket>();
  let down = false;
  let opened = 0;
  let wake = () => {};
  const server = net.createServer((client) => {
    if (down) return void client.destroy();
    const upstream = net.connect(Number(new URL(target).port), '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    let head = '';
    const opening = (d: Buffer) => {
      head += d;
      if (!head.includes(': connected')) return;
      upstream.off('data', opening);
      opened++;
      wake();
    };
    upstream.on('data', opening);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    opened: (n: number) =>
      new Promise<void>((resolve) => {
        wake = () => void (opened >= n && resolve());
        wake();
      }),
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    restore: () => void (down = false),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// A rare filter: the stream drops before anything matched. Without the opening block's id the
// tail would reconnect from the new head and never show what was committed meanwhile.
test('tps events tail dropped before its first matching event resumes from where its stream started: nothing committed in the gap is lost', async (t) => {
  const server = await startTps({ store: 'sqlite' });
  const proxy = await cuttableProxy(server.url);
  const child = tps(['events', 'tail', '--url', proxy.url, '--json', '--decision', 'deny'], { TPS_SECRET_KEY: server.secretKey });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const ingest = async (decision: 'allow' | 'deny') => {
    const record = ingestRecord({ decision });
    t.is((await post(`${server.url}/api/events/ingest`, record, server.secretKey)).status, 201);
    return record.telemetryId;
  };
  try {
    await proxy.opened(1);
    await ingest('allow');
    proxy.cut();
    const inGap = await ingest('deny');
    proxy.restore();
    // The tail is back on a stream of its own: what is committed now, it would show anyway.
    await proxy.opened(2);
    const after = await ingest('deny');
    for (const start = Date.now(); !stdout.includes(after); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() - start > 20_000) throw new Error(`the tail never showed ${after}: ${stdout} ${stderr}`);
    }
    const shown = stdout.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as DecisionEvent).telemetryId);
    t.deepEqual(shown, [inGap, after], stderr);
    t.regex(stderr, /stream interrupted .*; reconnecting/);
  } finally {
    child.kill('SIGKILL');
    proxy.cut();
    await proxy.close();
    await server.close();
  }
});

test('export streams: it never holds more than one page while a slow consumer lags behind', async (t) => {
  const server = await startTps({ store: 'sqlite' });
  try {
    const events = generateEvents(server.environment, 1200, Date.now());
    await server.tps.events.insertBatch(events);
    let fetched = 0;
    let written = 0;
    let widestGap = 0;
    const pageSize = 100;
    const counting: Pick<KnexEventStore, 'page'> = {
      async page(environment: string, filter: EventFilter, options: PageOptions) {
        const page = await server.tps.events.page(environment, filter, options);
        fetched += page.length;
        widestGap = Math.max(widestGap, fetched - written);
        return page;
      },
    };
    // A consumer that takes one line per tick and buffers at most one.
    const slow = new Writable({
      highWaterMark: 1,
      write(_chunk, _enc, done) {
        written++;
        setImmediate(done);
      },
    });
    const count = await exportEvents(counting, server.environment, {}, slow, { pageSize });
    t.is(count, 1200);
    t.is(written, 1200);
    t.true(widestGap <= pageSize + 1, `at most one page in flight (saw ${widestGap})`);
  } finally {
    await server.close();
  }
});
