import test from 'ava';
import type { DecisionEvent } from '../../src/api/types.js';
import { runTps } from '../helpers/cli.js';
import { REPO_ROOT, startTps, type RunningTps } from '../helpers/tps.js';
import { generateEvents } from './helpers.js';

// The real `tps` in a process of its own, against a real store holding events: a repeated value
// option or a stray word is a usage error (exit 2, nothing on stdout), never the last value or the
// whole environment exported with exit 0.

let server: RunningTps;
let env: Record<string, string>;

test.before(async () => {
  server = await startTps();
  await server.tps.events.insertBatch(generateEvents(server.environment, 60, Date.now() - 3_600_000));
  env = { DATABASE_URL: server.databaseUrl, TPS_ENVIRONMENT: server.environment };
});
test.after.always(() => server?.close());

const exported = (stdout: string) => stdout.trimEnd().split('\n').filter(Boolean).map((l) => JSON.parse(l) as DecisionEvent);

test('tps events export still takes each filter once', async (t) => {
  const r = await runTps(['events', 'export', '--decision', 'deny', '--actorId=actor_4'], { env });
  t.is(r.code, 0, r.stderr);
  const events = exported(r.stdout);
  t.true(events.length > 0);
  t.true(events.every((e) => e.decision === 'deny' && e.actorId === 'actor_4'));
});

test('tps events export refuses a filter given twice, naming it', async (t) => {
  for (const args of [
    ['--decision', 'deny', '--decision', 'allow'],
    ['--decision=deny', '--decision', 'allow'],
    ['--from', '2020-01-01', '--to', '2100-01-01', '--from', '2099-01-01'],
  ]) {
    const r = await runTps(['events', 'export', ...args], { env });
    t.is(r.code, 2, args.join(' '));
    t.is(r.stdout, '');
    t.regex(r.stderr, new RegExp(`--${args[args.length - 2]!.replace(/^--/, '')} is given more than once`));
    t.regex(r.stderr, /filters are --name value/);
  }
});

test('tps events export refuses a stray word rather than exporting without it', async (t) => {
  const asQuery = await runTps(['events', 'export', 'decision=deny'], { env });
  t.is(asQuery.code, 2);
  t.is(asQuery.stdout, '');
  t.regex(asQuery.stderr, /unexpected argument "decision=deny"; write it --decision deny/);

  const extra = await runTps(['events', 'export', '--decision', 'deny', '--actorId', 'actor_1', 'actor_2'], { env });
  t.is(extra.code, 2);
  t.is(extra.stdout, '');
  t.regex(extra.stderr, /unexpected argument "actor_2"; filters are --name value/);
});

test('tps events tail refuses a stray word or a repeated filter at once, rather than following every event', async (t) => {
  const key = { TPS_SECRET_KEY: server.secretKey };
  for (const args of [['decision=deny'], ['--decision', 'deny', '--decision', 'throttle']]) {
    const r = await runTps(['events', 'tail', '--url', server.url, ...args], { env: key, deadlineMs: 30_000 });
    t.falsy(r.timedOut, `${args.join(' ')} followed the stream`);
    t.is(r.code, 2, args.join(' '));
    t.is(r.stdout, '');
  }
  // A secret key written without its --key is refused without being echoed.
  const bare = await runTps(['events', 'tail', '--url', server.url, server.secretKey], { env: key, deadlineMs: 30_000 });
  t.is(bare.code, 2);
  t.false(bare.stderr.includes(server.secretKey));
});

test('other tps commands refuse a repeated value option and a stray word the same way', async (t) => {
  const replay = await runTps(['replay', REPO_ROOT, '--format', 'json', '--operation', 'invoice.export', '--operation', 'customer.create'], { env });
  t.is(replay.code, 2);
  t.is(replay.stdout, '');
  t.regex(replay.stderr, /--operation is given more than once/);

  const fixtures = await runTps(['test', REPO_ROOT, 'payments']);
  t.is(fixtures.code, 2);
  t.regex(fixtures.stderr, /unexpected argument "payments" after DIR/);

  const revoke = await runTps(['keys', 'revoke', 'key_a', 'key_b'], { env });
  t.is(revoke.code, 2);
  t.regex(revoke.stderr, /unexpected argument "key_b"/);

  // A repeated switch says the same thing twice: still accepted.
  const validate = await runTps(['validate', REPO_ROOT, '--json', '--json']);
  t.is(validate.code, 0, validate.stderr);
});
