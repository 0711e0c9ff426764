import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { bareEvent } from '../helpers/events.js';
import { storeHolding } from '../helpers/history.js';
import { REPO_ROOT } from '../helpers/tps.js';

// `tps replay` with no --env: TPS_ENVIRONMENT when set (as `tps events export` and `tps seed`
// default), else the store's one environment; a store of several and none named is a usage error
// naming them, rather than a report that mixes them.

const T0 = Date.UTC(2025, 0, 8, 12, 0, 0);

/** `tps replay REPO_ROOT --format json ARGS` as a user runs it, TPS_ENVIRONMENT as given ('' is unset). */
const replay = (url: string, environment: string, args: string[] = []) =>
  runTps(['replay', REPO_ROOT, '--format', 'json', ...args], { env: { DATABASE_URL: url, TPS_ENVIRONMENT: environment } });

const examined = (run: { stdout: string }) => (JSON.parse(run.stdout) as { examined: number }).examined;

test('tps replay with no --env refuses a store of several environments unless TPS_ENVIRONMENT names one', async (t) => {
  const store = await storeHolding(t, REPO_ROOT, [
    bareEvent('staging-1', { environment: 'staging', createdAt: T0 }),
    bareEvent('staging-2', { environment: 'staging', createdAt: T0 + 1000 }),
    bareEvent('test-1', { environment: 'test', createdAt: T0 + 2000 }),
  ]);

  const refused = await replay(store.url, '');
  t.is(refused.code, 2, refused.stderr);
  t.regex(refused.stderr, /the store holds events of 2 environments \("staging", "test"\): name one with --env NAME \(or set TPS_ENVIRONMENT\)/);
  t.is(refused.stdout, '');

  const fromVariable = await replay(store.url, 'staging');
  t.is(fromVariable.code, 0, fromVariable.stderr);
  t.is(examined(fromVariable), 2);
  t.regex(fromVariable.stderr, /replaying environment "staging" \(TPS_ENVIRONMENT\)/);

  // --env wins over the variable.
  const fromFlag = await replay(store.url, 'staging', ['--env', 'test']);
  t.is(fromFlag.code, 0, fromFlag.stderr);
  t.is(examined(fromFlag), 1);
});

test('tps replay with no --env and no TPS_ENVIRONMENT replays a store of one environment', async (t) => {
  const store = await storeHolding(t, REPO_ROOT, [bareEvent('only-1', { environment: 'staging', createdAt: T0 }), bareEvent('only-2', { environment: 'staging', createdAt: T0 + 1000 })]);
  const run = await replay(store.url, '');
  t.is(run.code, 0, run.stderr);
  t.is(examined(run), 2);
  t.regex(run.stderr, /replaying environment "staging" \(the only one stored\)/);
});

test('tps replay refuses an environment (TPS_ENVIRONMENT or --env) with no stored events, naming those found, rather than "0 of 0"', async (t) => {
  const store = await storeHolding(t, REPO_ROOT, [
    bareEvent('staging-1', { environment: 'staging', createdAt: T0 }),
    bareEvent('test-1', { environment: 'test', createdAt: T0 + 1000 }),
  ]);
  const cases: Array<[variable: string, args: string[], chosen: string, from: string]> = [
    ['production', ['--fail-on-change'], 'production', 'TPS_ENVIRONMENT'],
    ['staging', ['--env', 'stagng', '--fail-on-change'], 'stagng', '--env'],
  ];
  for (const [variable, args, chosen, from] of cases) {
    const run = await replay(store.url, variable, args);
    t.is(run.code, 2, run.stderr);
    t.is(run.stdout, '');
    t.true(run.stderr.includes(`environment "${chosen}" (${from}) has no stored events; the store holds events of 2 environments "staging", "test"`), run.stderr);
  }
});

test('tps replay --since/--until round a part of a millisecond up, as the API\'s from/to do', async (t) => {
  const store = await storeHolding(t, REPO_ROOT, [bareEvent('at-t0', { environment: 'staging', createdAt: T0 })]);
  const past = new Date(T0).toISOString().replace('Z', '5Z'); // T0 + 0.5 ms
  // since is inclusive: T0 + 0.5 ms comes after the event; until is exclusive: T0 + 0.5 ms is after it.
  const since = await replay(store.url, '', ['--since', past]);
  t.is(since.code, 0, since.stderr);
  t.is(examined(since), 0);
  const until = await replay(store.url, '', ['--until', past]);
  t.is(until.code, 0, until.stderr);
  t.is(examined(until), 1);
  // Half a millisecond apart is a window, however short.
  const window = await replay(store.url, '', ['--since', new Date(T0).toISOString(), '--until', past]);
  t.is(window.code, 0, window.stderr);
  t.is(examined(window), 1);
});
