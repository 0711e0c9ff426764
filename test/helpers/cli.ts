import { spawn } from 'node:child_process';
import path from 'node:path';
import { main } from '../../src/cli/index.js';
import { REPO_ROOT } from './tps.js';

/**
 * Runs `tps ARGS` in this process and captures what it prints. Output capture is process-wide,
 * so tests that use it must be test.serial; env is set for the call and restored after.
 */
export async function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  const stdout: string[] = [];
  const stderr: string[] = [];
  const realOut = process.stdout.write;
  const realErr = process.stderr.write;
  process.stdout.write = ((chunk: string | Uint8Array) => (stdout.push(String(chunk)), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => (stderr.push(String(chunk)), true)) as typeof process.stderr.write;
  try {
    const code = await main(args);
    return { code, stdout: stdout.join(''), stderr: stderr.join('') };
  } finally {
    process.stdout.write = realOut;
    process.stderr.write = realErr;
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const BIN = path.join(REPO_ROOT, 'bin/tps.js');
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `tps ARGS` as a user does, in a process of its own (bin/tps.js, LOG_LEVEL=silent under
 * `env`), until it exits. `appendTo` runs it as `tps ARGS >> FILE` in a shell (which execs it, so
 * the child is tps itself), the way a user keeps its output. `stopOn` stops it once its stderr
 * holds that text, reported with code null; `deadlineMs` stops it then, reported as `timedOut`: a
 * command that would go on forever fails the test instead of hanging it.
 */
export function runTps(args: readonly string[], options: { env?: Record<string, string>; cwd?: string; appendTo?: string; stopOn?: string; deadlineMs?: number } = {}): Promise<CliRun & { timedOut?: boolean }> {
  const env = { ...process.env, LOG_LEVEL: 'silent', ...options.env };
  const command = [process.execPath, BIN, ...args];
  const child = options.appendTo
    ? spawn('sh', ['-c', `exec ${command.map(quote).join(' ')} >> ${quote(options.appendTo)}`], { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command[0]!, command.slice(1), { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let [stdout, stderr, stopped] = ['', '', false];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (!stopped && options.stopOn !== undefined && stderr.includes(options.stopOn)) {
      stopped = true;
      child.kill('SIGKILL');
    }
  });
  let timedOut = false;
  const deadline = options.deadlineMs === undefined ? undefined : setTimeout(() => ((timedOut = stopped = true), child.kill('SIGKILL')), options.deadlineMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(deadline);
      resolve({ code: stopped ? null : code, stdout, stderr, ...(timedOut ? { timedOut } : {}) });
    });
  });
}
