import fs from 'node:fs';
import test from 'ava';
import { readSettings } from '../../src/config/env.js';
import { runCli, runTps } from '../helpers/cli.js';
import { noStores } from '../helpers/noStore.js';
import { freshDatabase, get, REPO_ROOT, startTps } from '../helpers/tps.js';

// The failure paths of `tps keys`, `tps events` and `tps seed`: a clear line on stderr and the
// documented exit code, never a stack trace, never anything on stdout that a pipe would keep.

const STACK_LINE = /^\s+at /m;

test.serial('an unreachable store: keys and events export exit 1 with one clear line, no stack trace, nothing on stdout', async (t) => {
  // Nothing listens on port 1: the connection is refused at once.
  const env = { DATABASE_URL: 'postgres://root@127.0.0.1:1/test', TPS_ENVIRONMENT: 'test', LOG_LEVEL: 'silent' };
  for (const args of [['keys', 'list', '--json'], ['keys', 'create', '--env', 'test'], ['events', 'export']]) {
    const r = await runCli(args, env);
    t.is(r.code, 1, args.join(' '));
    t.is(r.stdout, '', `${args.join(' ')} wrote to stdout: ${r.stdout}`);
    t.regex(r.stderr, /^tps: connect ECONNREFUSED 127\.0\.0\.1:1$/m);
    t.notRegex(r.stderr, STACK_LINE, `${args.join(' ')} printed a stack trace`);
  }
});

// The review tools only read (src/cli/readStore.ts): pointed at a database that holds no store,
// `events export`, `replay` and `events to-fixture` neither create one (a misspelt SQLite path, its
// folder) nor migrate one (a PostgreSQL schema), and say so rather than report nothing found.
test.serial('the review tools with no store at DATABASE_URL exit 1 with one clear line, and create or migrate nothing', async (t) => {
  const stores = noStores(t);
  const commands = [['events', 'export'], ['replay', REPO_ROOT], ['events', 'to-fixture', 'some-id', REPO_ROOT]];
  for (const [url, where] of stores.urls) {
    for (const args of commands) {
      const r = await runCli(args, { DATABASE_URL: url, TPS_ENVIRONMENT: 'test', LOG_LEVEL: 'silent' });
      t.is(r.code, 1, `${args[0]} ${url}`);
      t.is(r.stdout, '', `${args[0]} ${url}`);
      t.is(r.stderr, `tps: no TPS event store at ${where}: it has no events table; is DATABASE_URL right?\n`);
    }
  }
  await stores.untouched();
});

test('tps events tail refuses a URL it cannot use with exit 2 at once, instead of retrying it forever', async (t) => {
  for (const url of ['not-a-url', 'ftp://127.0.0.1:8787']) {
    const r = await runTps(['events', 'tail', '--url', url, '--key', 'svc_sec_x'], { stopOn: 'reconnecting' });
    t.is(r.code, 2, `${url}: ${r.stderr}`);
    t.regex(r.stderr, /--url \(or TPS_URL\) must be an http:\/\/ or https:\/\/ URL/);
    t.is(r.stdout, '');
  }
  const fromEnv = await runTps(['events', 'tail', '--key', 'svc_sec_x'], { env: { TPS_URL: '127.0.0.1:8787' }, stopOn: 'reconnecting' });
  t.is(fromEnv.code, 2, fromEnv.stderr);
});

test('tps events tail waits out a spent key quota (429, retry-after) and goes on, rather than exiting', async (t) => {
  const server = await startTps({ env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '1' } });
  t.teardown(() => server.close());
  // The minute's one request: the tail's own connection is then the quota's second.
  t.is((await get(`${server.url}/api/events?limit=1`, server.secretKey)).status, 200);
  // A tail that never met the 429 (it connected after the minute, on a starved machine) would follow
  // for ever: the deadline makes that a failure that says so, not a hung run.
  const r = await runTps(['events', 'tail', '--url', server.url, '--key', server.secretKey], { stopOn: ' s\n', deadlineMs: 90_000 });
  t.falsy(r.timedOut, `the tail never said it was waiting out the quota: stderr ${JSON.stringify(r.stderr)}`);
  t.is(r.code, null, `the tail exited with ${r.code}: ${r.stderr}`);
  t.regex(r.stderr, /^tps: the server answered 429: this key's quota of 1 requests per minute is spent; retrying in ([1-9]|[1-5]\d|60) s$/m);
  t.is(r.stdout, '');
});

test.serial('--env takes only a name an environment can have: each command exits 2 naming the rule, before it opens the store', async (t) => {
  const fresh = freshDatabase('sqlite');
  t.teardown(fresh.drop);
  const env = { DATABASE_URL: fresh.url, TPS_CONFIG_DIR: REPO_ROOT, TPS_ENVIRONMENT: 'demo', LOG_LEVEL: 'silent' };
  const commands = [['seed'], ['events', 'export'], ['replay'], ['events', 'to-fixture', 'tl_x'], ['explain'], ['keys', 'create']];
  for (const words of commands) {
    const r = await runCli([...words, '--env', 'prod env'], env);
    t.is(r.code, 2, `${words.join(' ')}: ${r.stderr}`);
    t.regex(r.stderr, /--env must be an environment name \(1–64 letters, digits, - and _\), got "prod env"/, words.join(' '));
    t.is(r.stdout, '', words.join(' '));
  }
  t.false(fs.existsSync(fresh.url.slice('sqlite:'.length)), 'a command opened (and so created) the store before refusing its --env');
  t.throws(() => readSettings({ TPS_ENVIRONMENT: 'prod env' }), { message: 'TPS_ENVIRONMENT must be an environment name (1–64 letters, digits, - and _), got "prod env"' });
});

test.serial('tps seed --only with a name no seed file has exits 2 and seeds nothing', async (t) => {
  const fresh = freshDatabase('sqlite');
  t.teardown(fresh.drop);
  const env = { DATABASE_URL: fresh.url, TPS_CONFIG_DIR: REPO_ROOT, TPS_ENVIRONMENT: 'demo', LOG_LEVEL: 'silent' };
  const typo = await runCli(['seed', '--only', 'demos', '--events', '50'], env);
  t.is(typo.code, 2);
  t.regex(typo.stderr, /--only demos matches no seed file \(01_catalog\.ts, 02_demo_history\.ts\)/);
  t.is(typo.stdout, '');
  const fine = await runCli(['seed', '--only', 'demo', '--events', '50'], env);
  t.is(fine.code, 0, fine.stderr);
  t.regex(fine.stdout, /50 stored, 0 already there/);
});
