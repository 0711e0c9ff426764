import fs from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { runTps } from '../helpers/cli.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { policyVersion, readyzUntil } from '../helpers/readyz.js';
import { runningServer, startServer, type ScriptProcess } from '../helpers/script.js';
import { freshDatabase, get, post, startTps } from '../helpers/tps.js';
import { loadCatalog } from '../../src/policy/catalog.js';

// YAML as TPS reads it (configuration, fixtures, `tps explain` requests): aliases that make a
// document loop or explode are located problems, hidden files are not configuration, a file must be
// UTF-8, an unquoted date is a string (as JSON would give it), and a fixture case runs the
// operation it names and no other.

// A process that would loop on a cyclic or exploding document (the code before these checks) is
// stopped by its heap limit rather than let it take the machine's memory.
const BOUNDED = { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=256`.trim() };
const FAST = { TPS_WATCH_DEBOUNCE_MS: '20', TPS_WATCH_SETTLE_MS: '20' };

const CYCLE = `rules:
  - name: loops
    when: &w { not: *w }
    then: { decision: deny, reason: looping_rule }
`;

/** `levels` rules, each condition listing the one before twice: a few lines that stand for 2^levels conditions. */
function fanOut(levels: number): string {
  const lines = ['rules:', '  - name: r0', '    when: &a0 { fact: requestData.amount, operator: greaterThan, value: 1 }', '    then: { decision: deny, reason: fan_out }'];
  for (let k = 1; k <= levels; k++) lines.push(`  - name: r${k}`, `    when: &a${k} { all: [ *a${k - 1}, *a${k - 1} ] }`, '    then: { decision: deny, reason: fan_out }');
  return `${lines.join('\n')}\n`;
}

/** The server as `npm start` runs it, watching its configuration; stopped (killed if it does not stop) and its store dropped after the test. */
async function watchingServer(t: ExecutionContext, cfg: TempConfig): Promise<{ server: ScriptProcess; url: string }> {
  const db = freshDatabase('sqlite');
  t.teardown(async () => {
    await db.drop();
    cfg.cleanup();
  });
  const server = await runningServer({ DATABASE_URL: db.url, TPS_CONFIG_DIR: cfg.dir, TPS_ENVIRONMENT: 'test', TPS_WORKERS: '1', ...FAST, ...BOUNDED });
  t.teardown(() => stopSurely(server));
  return { server, url: `http://127.0.0.1:${server.port}` };
}

/** SIGTERM, and SIGKILL if it has not ended 5 s later (a server whose thread is held never handles SIGTERM). */
async function stopSurely(server: ScriptProcess): Promise<void> {
  const kill = setTimeout(() => server.signal('SIGKILL'), 5000);
  await server.stop();
  clearTimeout(kill);
}

const getWithin = async (url: string, ms: number) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(ms) });
  return { status: res.status, body: (await res.json()) as any };
};

test('a rule that contains itself through an alias: validate, validate --json and start-up name the file and the path', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(() => cfg.cleanup());
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + CYCLE);

  const json = await runTps(['validate', '--json', cfg.dir], { env: BOUNDED, deadlineMs: 60_000 });
  t.is(json.code, 1, json.stderr);
  const body = JSON.parse(json.stdout);
  t.is(body.ok, false);
  const cycle = body.problems.find((p: any) => p.path === 'rules[0].when.not');
  t.truthy(cycle, json.stdout);
  t.true(cycle.file.endsWith(path.join('rules', 'standard.yaml')));
  t.is(cycle.line, 7);
  t.regex(cycle.message, /is an alias of rules\[0\]\.when, which contains it/);

  const text = await runTps(['validate', cfg.dir], { env: BOUNDED, deadlineMs: 60_000 });
  t.is(text.code, 1);
  t.regex(text.stderr, /rules\/standard\.yaml:7 at rules\[0\]\.when\.not: .*contains it/);
  t.notRegex(text.stderr, /call stack/);

  const db = freshDatabase('sqlite');
  t.teardown(() => db.drop());
  const server = await startServer({ DATABASE_URL: db.url, TPS_CONFIG_DIR: cfg.dir, TPS_ENVIRONMENT: 'test', TPS_WORKERS: '1', ...BOUNDED });
  t.teardown(() => stopSurely(server));
  t.is(server.code, 1);
  t.regex(server.stderr, /TPS did not start: configuration has \d+ problems?:\n.*rules\/standard\.yaml:7 at rules\[0\]\.when\.not: /);
});

test('aliases that fan out to millions of conditions: tps validate refuses the file, located, instead of running for minutes', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(() => cfg.cleanup());
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + fanOut(20));
  const run = await runTps(['validate', '--json', cfg.dir], { env: BOUNDED, deadlineMs: 60_000 });
  t.falsy(run.timedOut);
  t.is(run.code, 1, run.stderr);
  const problem = JSON.parse(run.stdout).problems.find((p: any) => p.file.endsWith(path.join('rules', 'standard.yaml')));
  t.truthy(problem, run.stdout);
  t.regex(problem.path, /^rules\[\d+\]\.when\.all\[\d\]$/);
  t.regex(problem.message, /aliases repeat more than 10,000 values in this file/);
});

test('hot reload of a rule that contains itself is rejected on /readyz, naming the file and the path', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const { url } = await watchingServer(t, cfg);
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + CYCLE);
  const refused = await readyzUntil(url, (b) => b.configuration.lastReload.status !== 'ok', 20_000);
  t.is(refused.configuration.lastReload.status, 'rejected');
  const problem = refused.configuration.lastReload.problems.find((p: any) => p.path === 'rules[0].when.not');
  t.truthy(problem, JSON.stringify(refused.configuration.lastReload));
  t.true(problem.file.endsWith(path.join('rules', 'standard.yaml')));
  t.is(problem.line, 7);
  t.is((await get(`${url}/healthz`)).status, 200);
});

test('hot reload of a fan-out of aliases is rejected at once, and the server keeps answering meanwhile', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const { url } = await watchingServer(t, cfg);
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + fanOut(20));
  const deadline = Date.now() + 20_000;
  let readyz: any;
  for (;;) {
    // A generous bound, not a latency target: the code before this check held the thread for minutes.
    t.is((await getWithin(`${url}/healthz`, 5000)).status, 200);
    readyz = (await getWithin(`${url}/readyz`, 5000)).body;
    if (readyz.configuration.lastReload.status !== 'ok' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.is(readyz.configuration.lastReload.status, 'rejected');
  t.true(readyz.configuration.lastReload.problems.some((p: any) => p.file.endsWith(path.join('rules', 'standard.yaml')) && /aliases repeat more than/.test(p.message)));
});

const DATED_RULE = `rules:
  - name: frozen-date
    when:
      all:
        - { fact: requestData.effectiveDate, operator: equal, value: "2025-01-31" }
    then: { decision: deny, reason: frozen_effective_date }
`;

test('an unquoted date is a string: the server, tps explain on a YAML request and a case from tps events to-fixture all deny', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + DATED_RULE);
  const tps = await startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const request = {
    operationKey: 'customer.create',
    actor: { id: 'user-1', authenticated: true, roles: ['staff'] },
    resource: { type: 'customer', id: '2025-01-31' },
    requestData: { effectiveDate: '2025-01-31' },
    session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  };
  const live = await post(`${tps.url}/api/evaluate`, request, tps.secretKey);
  t.is(live.status, 200);
  t.is(live.body.decision, 'deny');

  const fixture = await runTps(['events', 'to-fixture', live.body.telemetryId, cfg.dir], { env: { DATABASE_URL: tps.databaseUrl } });
  t.is(fixture.code, 0, fixture.stderr);
  // Quoted, so any YAML reader (js-yaml's default schema makes a Date of it) reads it back as a string.
  t.regex(fixture.stdout, /id: "2025-01-31"/);
  t.regex(fixture.stdout, /effectiveDate: "2025-01-31"/);
  cfg.write('rules/standard.fixtures.yaml', `cases:\n${fixture.stdout}\n`);
  const run = await runTps(['test', cfg.dir]);
  t.is(run.code, 0, run.stdout + run.stderr);
  t.regex(run.stdout, /1 passed/);

  // The same request as YAML, dates unquoted as a person writes them.
  const yamlRequest = cfg.path('request.yaml');
  fs.writeFileSync(
    yamlRequest,
    `operationKey: customer.create
actor: { id: user-1, authenticated: true, roles: [staff] }
resource: { type: customer, id: 2025-01-31 }
requestData: { effectiveDate: 2025-01-31 }
session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
`,
  );
  const explained = await runTps(['explain', '--request', yamlRequest, '--json', cfg.dir]);
  t.is(explained.code, 0, explained.stderr);
  t.is(JSON.parse(explained.stdout).response.decision, 'deny');
});

test('a hand-written fixture with unquoted dates (in requestData and at) decides as the server does', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(() => cfg.cleanup());
  cfg.write('rules/standard.yaml', cfg.read('rules/standard.yaml') + DATED_RULE);
  cfg.write(
    'rules/standard.fixtures.yaml',
    `operation: customer.create
bases:
  clean:
    actor: { id: user-1, authenticated: true, roles: [staff] }
    resource: { type: customer, id: cus-1 }
    session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
cases:
  - name: the frozen date is denied
    base: clean
    at: 2025-01-08T12:00:00Z
    request: { requestData: { effectiveDate: 2025-01-31 } }
    expect: { decision: deny, reasons: { includes: [frozen_effective_date] } }
  - name: another date is allowed
    base: clean
    request: { requestData: { effectiveDate: 2025-02-01 } }
    expect: { decision: allow }
`,
  );
  const run = await runTps(['test', cfg.dir]);
  t.is(run.code, 0, run.stdout + run.stderr);
  t.regex(run.stdout, /2 passed/);

  // Unquoted in the policy too: compared as the string a request sends, not refused as a Date.
  cfg.replace('rules/standard.yaml', 'value: "2025-01-31"', 'value: 2025-01-31');
  const unquoted = await runTps(['test', cfg.dir]);
  t.is(unquoted.code, 0, unquoted.stdout + unquoted.stderr);
  t.regex(unquoted.stdout, /2 passed/);
});

test('hidden files (an Emacs lock symlink, a macOS ._ file) are not configuration: start-up, reloads, validate and tps test skip them', async (t) => {
  const cfg = tempConfig();
  // Emacs's lock file: a dangling symlink, kept while a buffer is modified.
  fs.symlinkSync('editor@host.4242:1700000000', cfg.path('rules/.#payments.yaml'));
  fs.symlinkSync('editor@host.4242:1700000000', cfg.path('rules/.#payments.fixtures.yaml'));
  // AppleDouble: binary metadata beside a file copied from macOS.
  fs.writeFileSync(cfg.path('operations/._customer.create.yaml'), Buffer.from([0, 5, 22, 7, 0, 2, 0, 0, 0xff, 0xfe]));
  const tps = await startTps({ configDir: cfg.dir, env: FAST });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  t.is((await get(`${tps.url}/readyz`)).status, 200);

  // A lock made while the server runs neither triggers a reload nor spoils the next one.
  fs.symlinkSync('editor@host.4242:1700000001', cfg.path('rules/.#standard.yaml'));
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const want = loadCatalog(cfg.dir).policies.get('payments')!.versionId;
  const reloaded = await readyzUntil(tps.url, (b) => policyVersion(b, 'payments') === want || b.configuration.lastReload.status !== 'ok');
  t.deepEqual(reloaded.configuration.lastReload, { status: 'ok' });
  t.is(policyVersion(reloaded, 'payments'), want);

  const validated = await runTps(['validate', cfg.dir]);
  t.is(validated.code, 0, validated.stderr);
  const tested = await runTps(['test', cfg.dir]);
  t.is(tested.code, 0, tested.stdout + tested.stderr);
});

test('a file that is not UTF-8 is refused, located, instead of read with U+FFFD in place of its bytes', async (t) => {
  const cfg = tempConfig();
  t.teardown(() => cfg.cleanup());
  // Latin-1: ü is the single byte 0xFC.
  const latin1 = (text: string) => Buffer.from(text, 'latin1');
  const policy = cfg.read('rules/standard.yaml');
  fs.writeFileSync(cfg.path('rules/standard.yaml'), latin1(`${policy}requireRoles: [staff, zürich]\n`));
  const byte = Buffer.byteLength(policy) + 'requireRoles: [staff, z'.length + 1;
  const line = policy.split('\n').length;

  const validated = await runTps(['validate', cfg.dir]);
  t.is(validated.code, 1);
  t.regex(validated.stderr, new RegExp(`rules/standard\\.yaml:${line}: the file is not UTF-8 \\(byte ${byte}\\)`));
  await t.throwsAsync(startTps({ configDir: cfg.dir, env: { TPS_WATCH_CONFIG: 'false' } }), { message: /rules\/standard\.yaml:\d+: the file is not UTF-8/ });

  fs.writeFileSync(cfg.path('rules/standard.yaml'), policy);
  // Even in a comment: the file as a whole is read as UTF-8.
  fs.writeFileSync(cfg.path('rules/standard.fixtures.yaml'), latin1(`# Zürich team\n${cfg.read('rules/standard.fixtures.yaml')}`));
  const tested = await runTps(['test', cfg.dir]);
  t.is(tested.code, 1);
  t.regex(tested.stdout + tested.stderr, /rules\/standard\.fixtures\.yaml:1: the file is not UTF-8 \(byte 4\)/);
});

test("a fixture's base or request that sets another operationKey is a located problem, not a case run against another policy", async (t) => {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(() => cfg.cleanup());
  cfg.write(
    'rules/payments.fixtures.yaml',
    `operation: payment_transaction.create
bases:
  finance:
    actor: { id: fin-1, authenticated: true, roles: [finance] }
    resource: { type: payment_method, id: pm-1 }
    session: { sessionId: s-1, continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 }
    requestData: { amount: 250, currency: EUR }
  elsewhere:
    operationKey: customer.create
    actor: { id: user-1, authenticated: true, roles: [staff] }
    resource: { type: customer, id: cus-1 }
cases:
  - name: names its own operation, the same one
    base: finance
    request: { operationKey: payment_transaction.create }
    expect: { decision: allow }
  - name: the request runs another operation
    base: finance
    request: { operationKey: customer.create, actor: { roles: [staff] } }
    expect: { decision: allow }
  - name: the base runs another operation
    base: elsewhere
    expect: { decision: allow }
`,
  );
  const run = await runTps(['test', cfg.dir]);
  t.is(run.code, 1);
  const output = run.stdout + run.stderr;
  t.regex(output, /rules\/payments\.fixtures\.yaml:\d+ at cases\[1\]\.request\.operationKey: the request sets operationKey "customer\.create", but this case runs operation "payment_transaction\.create"/);
  t.regex(output, /rules\/payments\.fixtures\.yaml:\d+ at cases\[2\]\.base: base "elsewhere" sets operationKey "customer\.create"/);
  t.notRegex(output, /cases\[0\]/);
});
