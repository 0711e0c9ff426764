// The policy commands read the configuration folder and nothing else: a shell whose server variables
// the server would refuse (PORT=abc) still validates, compiles, tests and explains. Run as a user
// runs it, the real `tps` (bin/tps.js) in a process of its own, from a folder that is not the config.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';

// Each would stop the server at start (src/config/env.ts).
const REFUSED_BY_THE_SERVER = { PORT: 'abc', LOG_LEVEL: 'loud', TPS_WORKERS: '0', TPS_AI_URL: 'ftp://x' };

const tps = (args: string[], cwd: string, env: Record<string, string>) => runTps(args, { cwd, env });

test('validate, compile, test and explain ignore server variables they do not need, and still read TPS_CONFIG_DIR', async (t) => {
  const cfg = tempConfig();
  const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-cwd-'));
  t.teardown(() => {
    cfg.cleanup();
    fs.rmSync(elsewhere, { recursive: true, force: true });
  });
  const env = { ...REFUSED_BY_THE_SERVER, TPS_CONFIG_DIR: cfg.dir };
  const request = path.join(elsewhere, 'request.json');
  fs.writeFileSync(request, JSON.stringify({ actor: { id: 'u-1', authenticated: true }, resource: { type: 'customer', id: 'c-1' } }));

  const validated = await tps(['validate'], elsewhere, env);
  t.is(validated.code, 0, validated.stderr);
  t.regex(validated.stdout, /^ok: \d+ operations, /);

  const compiled = await tps(['compile', '--operation', 'customer.create'], elsewhere, env);
  t.is(compiled.code, 0, compiled.stderr);
  t.is(JSON.parse(compiled.stdout).operations[0].key, 'customer.create');

  const tested = await tps(['test', '--match', 'a change made with a human at the keyboard is allowed'], elsewhere, env);
  t.is(tested.code, 0, tested.stderr + tested.stdout);

  const explained = await tps(['explain', '--operation', 'customer.create', '--request', request, '--json'], elsewhere, env);
  t.is(explained.code, 0, explained.stderr);
  t.is(JSON.parse(explained.stdout).response.operationKey, 'customer.create');
});
