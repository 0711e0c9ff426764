import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import path from 'node:path';
import { REPO_ROOT } from './tps.js';

/** Runs a TypeScript script of the repository (e.g. `bench/run.ts`) in a child process with tsx, and collects what it printed. */
export function runScript(file: string, env: Record<string, string> = {}, args: readonly string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawnScript(file, args, env);
  let [stdout, stderr] = ['', ''];
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.once('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The script started with tsx from the repository's root, its output piped, for a test that must handle the child itself. */
export function spawnScript(file: string, args: readonly string[] = [], env: Record<string, string> = {}): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, file), ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}
