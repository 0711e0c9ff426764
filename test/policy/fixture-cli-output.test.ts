import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { openFreshStore } from '../helpers/config.js';
import { REPO_ROOT } from '../helpers/tps.js';

// Where `tps test` and `tps events to-fixture` put what they write: the JUnit file where it was
// asked for (its folder made), errors on stderr so that a redirect keeps only what was asked for.

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-cli-out-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("tps test --junit reports/fixtures.xml (README's example) makes the reports folder", async (t) => {
  const cwd = tempDir(t);
  const r = await runTps(['test', REPO_ROOT, '--junit', 'reports/fixtures.xml', '--match', 'payments'], { cwd });
  t.is(r.code, 0, r.stderr);
  t.is(r.stderr, '');
  t.regex(r.stdout, /\n[1-9]\d* passed, 0 failed\n$/);
  t.regex(fs.readFileSync(path.join(cwd, 'reports/fixtures.xml'), 'utf8'), /^<\?xml[^]*<testsuites name="tps fixtures" tests="[1-9]\d*" failures="0" errors="0"/);
});

test('a JUnit file tps test cannot write is an error of its own, naming the file, after the report', async (t) => {
  const cwd = tempDir(t);
  // A folder where the file should be: no write can succeed, root or not.
  const junit = path.join(cwd, 'reports');
  fs.mkdirSync(junit);
  const r = await runTps(['test', REPO_ROOT, '--junit', junit, '--match', 'payments'], { cwd });
  t.is(r.code, 1);
  t.regex(r.stdout, /\n[1-9]\d* passed, 0 failed\n$/);
  t.is(r.stderr, `tps: cannot write the JUnit report ${junit}: EISDIR: illegal operation on a directory, open '${junit}'\n`);
});

test('tps events to-fixture with an unknown telemetryId errs on stderr: `>> fixtures.yaml` leaves the file as it was', async (t) => {
  const store = await openFreshStore('sqlite');
  t.teardown(store.close);
  const dir = tempDir(t);
  const fixtures = path.join(dir, 'payments.fixtures.yaml');
  const before = fs.readFileSync(path.join(REPO_ROOT, 'rules/payments.fixtures.yaml'), 'utf8');
  fs.writeFileSync(fixtures, before);
  const r = await runTps(['events', 'to-fixture', 'no-such-event', REPO_ROOT], { env: { DATABASE_URL: store.url }, appendTo: fixtures });
  t.is(r.code, 1);
  t.is(r.stderr, 'tps: no event with telemetryId no-such-event\n');
  t.is(fs.readFileSync(fixtures, 'utf8'), before, 'the error was appended to the fixtures file');

  const inEnv = await runTps(['events', 'to-fixture', 'no-such-event', REPO_ROOT, '--env', 'production'], { env: { DATABASE_URL: store.url } });
  t.is(inEnv.code, 1);
  t.is(inEnv.stdout, '');
  t.is(inEnv.stderr, 'tps: no event with telemetryId no-such-event in environment production\n');
});
