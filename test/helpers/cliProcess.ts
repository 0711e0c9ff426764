import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './tps.js';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const BIN = path.join(REPO_ROOT, 'bin/tps.js');
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `tps ARGS` as a user does, in a process of its own (bin/tps.js), until it exits. `appendTo`
 * runs it as `tps ARGS >> FILE` in a shell, the way a user keeps its output.
 */
export function runTps(args: readonly string[], options: { env?: Record<string, string>; cwd?: string; appendTo?: string } = {}): Promise<CliRun> {
  const env = { ...process.env, LOG_LEVEL: 'silent', ...options.env };
  const command = [process.execPath, BIN, ...args];
  const child = options.appendTo
    ? spawn('sh', ['-c', `${command.map(quote).join(' ')} >> ${quote(options.appendTo)}`], { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(command[0]!, command.slice(1), { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
