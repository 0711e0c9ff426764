import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { loadCatalog } from '../../src/policy/catalog.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { policyVersion, readyzUntil } from '../helpers/readyz.js';
import { get, startTps } from '../helpers/tps.js';

// fs.watch follows a folder's inode, not its name: a rules/ replaced by another folder (deploy
// tools copy one in; editors and `git checkout` may delete and re-create it), or a symlinked
// TPS_CONFIG_DIR flipped to another release, must be watched again where it now is.

const fast = { TPS_WATCH_DEBOUNCE_MS: '20', TPS_WATCH_SETTLE_MS: '20' };
const versionOf = (cfg: TempConfig | string) => loadCatalog(typeof cfg === 'string' ? cfg : cfg.dir).policies.get('payments')!.versionId;
const servedPayments = (url: string, cfg: TempConfig | string) => {
  const want = versionOf(cfg);
  return readyzUntil(url, (b) => policyVersion(b, 'payments') === want);
};

test('a rules folder replaced, by mv and cp or by rm -rf and cp, is watched again: later edits reload without SIGHUP', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const tps = await startTps({ configDir: cfg.dir, env: fast });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const original = (await get(`${tps.url}/readyz`)).body.configuration.versionId;

  // mv rules rules.old; cp -r rules.old rules: the old watch stays on rules.old.
  fs.renameSync(cfg.path('rules'), cfg.path('rules.old'));
  fs.cpSync(cfg.path('rules.old'), cfg.path('rules'), { recursive: true });
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const moved = await servedPayments(tps.url, cfg);
  t.not(moved.configuration.versionId, original);
  // Served once the new folder is watched: an edit now is seen through that watch alone.
  cfg.replace('rules/payments.yaml', 'value: 5000', 'value: 4000');
  const edited = await servedPayments(tps.url, cfg);
  t.deepEqual(edited.configuration.lastReload, { status: 'ok' });

  // rm -rf rules && cp -r rules.old rules: the old watch dies with its folder.
  fs.rmSync(cfg.path('rules'), { recursive: true });
  fs.cpSync(cfg.path('rules.old'), cfg.path('rules'), { recursive: true });
  const restored = await readyzUntil(tps.url, (b) => b.configuration.versionId === original);
  t.deepEqual(restored.configuration.lastReload, { status: 'ok' });
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 3000');
  const after = await servedPayments(tps.url, cfg);
  t.deepEqual(after.configuration.lastReload, { status: 'ok' });
});

test('a symlinked TPS_CONFIG_DIR flipped to another folder (ln -sfn) is loaded from there and watched there', async (t) => {
  const blue = tempConfig({ fixtures: false });
  const green = tempConfig({ fixtures: false });
  green.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  const linkDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-config-link-'));
  const current = path.join(linkDir, 'current');
  fs.symlinkSync(blue.dir, current);
  const tps = await startTps({ configDir: current, env: fast });
  t.teardown(async () => {
    await tps.close();
    for (const cfg of [blue, green]) cfg.cleanup();
    fs.rmSync(linkDir, { recursive: true, force: true });
  });
  t.is(policyVersion((await get(`${tps.url}/readyz`)).body, 'payments'), versionOf(blue));

  // No file event tells of the flip: the folder the link names now is another one.
  execFileSync('ln', ['-sfn', green.dir, current]);
  const flipped = await servedPayments(tps.url, green);
  t.deepEqual(flipped.configuration.lastReload, { status: 'ok' });

  green.replace('rules/payments.yaml', 'value: 5000', 'value: 2000');
  const edited = await servedPayments(tps.url, green);
  t.deepEqual(edited.configuration.lastReload, { status: 'ok' });
});
