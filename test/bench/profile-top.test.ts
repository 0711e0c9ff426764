import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { runScript, spawnScript } from '../helpers/script.js';
import { REPO_ROOT } from '../helpers/tps.js';

// A real profile from `node --cpu-prof`, of a named function that keeps the CPU busy, read back
// by the summarizer the README tells readers to pipe into `head`.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-profile-top-'));
test.after.always(() => fs.rmSync(dir, { recursive: true, force: true }));

// Also zstd, as TPS compresses explanations with it: its time belongs to their encoding's area.
const BUSY = `function spinForTheProfile(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) x += Math.sqrt(x + 1); return x; }
  spinForTheProfile(400);
  const c = new (require('zstd-napi').Compressor)(); const text = Buffer.from(JSON.stringify(Array.from({ length: 5000 }, (_, i) => ({ i, r: Math.random() }))));
  for (const end = Date.now() + 200; Date.now() < end; ) c.compress(text);`;

let file = '';
test.before(() => {
  execFileSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, '-e', BUSY], { cwd: REPO_ROOT });
  file = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!);
});

test('profile-top prints the areas, the self and the inclusive time of a real profile: its busy function on top, zstd under the explanation encoding', async (t) => {
  const { code, stdout, stderr } = await runScript('bench/profile-top.ts', {}, [file, '3']);
  t.is(code, 0, stderr);
  const sections = stdout.split('\n\n').filter(Boolean);
  t.deepEqual(
    sections.map((s) => s.split(' (share of')[0]!.trim()),
    ['self time by area', 'self time', 'inclusive time'],
  );
  // N = 3: three entries a section (the profile has more of each); the busy function leads the self time.
  for (const s of sections) t.is(s.trim().split('\n').length, 1 + 3, s);
  t.regex(sections[1]!.split('\n')[1]!, /^\s*\d+\.\d%\s+spinForTheProfile /);
  t.regex(sections[0]!, /^\s*\d+\.\d%\s+explanation encoding \(JSON, zstd\)$/m);
});

test('profile-top piped into a reader that has left ends quietly, as under `| head`', async (t) => {
  const proc = spawnScript('bench/profile-top.ts', [file]);
  // The reader closes before the first line is written, so every write meets EPIPE.
  proc.stdout.destroy();
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  t.is(code, 0, stderr);
  t.notRegex(stderr, /EPIPE/);
});

test('profile-top without a file says how to use it', async (t) => {
  const { code, stderr } = await runScript('bench/profile-top.ts');
  t.not(code, 0);
  t.regex(stderr, /usage: tsx bench\/profile-top\.ts FILE\.cpuprofile \[N\]/);
});
