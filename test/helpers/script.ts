import { spawn, type ChildProcessByStdio } from 'node:child_process';
import fs from 'node:fs';
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

/** Where a child runs, as a container would place it. */
export interface Placement {
  /** taskset's CPU list (e.g. "0"): the child is allowed only those CPUs. */
  cpus?: string;
  /** A cgroup's directory (cpuQuotaGroup, test/helpers/cgroup.ts): the child runs in it from its start. */
  cgroup?: string;
}

/**
 * The script started with tsx from the repository's root, its output piped, for a test that must
 * handle the child itself, placed as `place` says.
 */
export function spawnScript(file: string, args: readonly string[] = [], env: Record<string, string> = {}, place: Placement = {}): ChildProcessByStdio<null, Readable, Readable> {
  let command = [process.execPath, '--import', 'tsx', path.join(REPO_ROOT, file), ...args];
  // Each wrapper sets the child up and then execs the next, so the child's pid and signals are node's.
  if (place.cpus !== undefined) command = ['taskset', '-c', place.cpus, ...command];
  if (place.cgroup !== undefined) command = ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', place.cgroup, ...command];
  return spawn(command[0]!, command.slice(1), { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A script of the repository in a process of its own, handed back at once, for a test that acts while it runs. */
export interface ScriptProcess {
  readonly pid: number;
  /** What it has printed so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** The `times`-th match of the pattern in its stdout (groups included), now or later; an error if it ends first. */
  logged(pattern: RegExp, times?: number): Promise<RegExpMatchArray>;
  /** The first match of the pattern in its stderr, as logged(). */
  said(pattern: RegExp): Promise<RegExpMatchArray>;
  /** The port of the `url` in the first log line with this message, as logged(). */
  loggedPort(msg: string): Promise<number>;
  /** Its exit code, or the signal that ended it, once everything it printed has been read. */
  readonly exited: Promise<Exit>;
  /** Sends the signal and goes on (SIGHUP to the server: reload the configuration). */
  signal(signal: NodeJS.Signals): void;
  /** Sends the signal unless it has already exited, and resolves with its exit code once it has. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// The closing quotes keep a line cut between two chunks from matching half a port. The message is
// matched as the log line spells it (JSON, quotes included), as text rather than as a pattern.
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const urlBeside = (msg: string) => new RegExp(`"url":"(http:[^"]+)"[^\\n]*"msg":${literal(JSON.stringify(msg))}`);
const everyMatch = (pattern: RegExp) => new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`);

/** The script started as spawnScript starts it, its output collected. */
export function startScript(file: string, env: Record<string, string> = {}, args: readonly string[] = [], place?: Placement): ScriptProcess {
  const child = spawnScript(file, args, env, place);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  // 'close', not 'exit': by then everything it printed has been read.
  const exited = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const waitFor = (stream: 'stdout' | 'stderr', found: (text: string) => RegExpMatchArray | undefined, what: string) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      // Added after the listener that appends, so it sees each chunk appended.
      const look = () => {
        const match = found(out[stream]);
        if (!match) return;
        child[stream].off('data', look);
        resolve(match);
      };
      child[stream].on('data', look);
      void exited.then(({ code, signal }) => reject(new Error(`${file} ended (${code ?? signal}) before printing ${what}:\n${out.stderr}${out.stdout}`)));
      look();
    });
  const proc: ScriptProcess = {
    pid: child.pid!,
    get stdout() {
      return out.stdout;
    },
    get stderr() {
      return out.stderr;
    },
    logged: (pattern, times = 1) => waitFor('stdout', (text) => [...text.matchAll(everyMatch(pattern))][times - 1], `${pattern} (${times} time(s))`),
    said: (pattern) => waitFor('stderr', (text) => text.match(pattern) ?? undefined, String(pattern)),
    loggedPort: async (msg) => Number(new URL((await proc.logged(urlBeside(msg)))[1]!).port),
    exited,
    signal: (signal) => void child.kill(signal),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return (await exited).code;
    },
  };
  return proc;
}

/** The real server (src/server.ts) as `npm start` runs it, on loopback (PORT=0, HOST and LOG_LEVEL=info under `env`), handed back before it listens. */
export const spawnServer = (env: Record<string, string>, place?: Placement): ScriptProcess =>
  startScript('src/server.ts', { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, [], place);

/** The real server, once it listens or has exited. */
export interface ServerProcess extends ScriptProcess {
  /** The port it listens on, as it logged it; 0 when it exited before listening. */
  port: number;
  /** Its exit code when it stopped before listening (a refused start-up); null while it runs. */
  code: number | null;
}

/**
 * Starts the server as spawnServer does; resolves once it listens (with TPS_WORKERS > 1, pid is
 * the primary's), or once it has exited. The port is the one it logs: a port picked here could be
 * taken by then (most likely what failed a CI run once).
 */
export async function startServer(env: Record<string, string>, place?: Placement): Promise<ServerProcess> {
  const server: ServerProcess = Object.assign(spawnServer(env, place), { port: 0, code: null });
  try {
    server.port = await server.loggedPort('TPS listening');
  } catch {
    server.code = (await server.exited).code;
  }
  return server;
}

/** startServer for a test that needs it running: a start-up that ended is an error carrying what it printed. */
export async function runningServer(env: Record<string, string>, place?: Placement): Promise<ServerProcess> {
  const server = await startServer(env, place);
  if (server.code !== null) throw new Error(`the server exited with ${server.code} before listening:\n${server.stderr}${server.stdout}`);
  return server;
}

// Linux names every thread "node"; the evaluation thread names itself (THREAD_NAME), which is how
// these and the benchmark's split by thread (bench/threads.ts) tell it apart.
/** The names of a process's threads, from /proc. */
export const threadNames = (pid: number | 'self' = 'self'): string[] =>
  fs.readdirSync(`/proc/${pid}/task`).map((tid) => fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim());

/** The CPUs a process is allowed (its affinity mask), as /proc lists them: "0", "0-1". */
export const allowedCpus = (pid: number | 'self' = 'self'): string => /^Cpus_allowed_list:\s*(.+)$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;

/** The pids of a process's children, from /proc: with TPS_WORKERS > 1, the primary's workers. */
export function childrenOf(pid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
        // tsx may start an esbuild service beside the workers (a cold transform cache does): not a worker.
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        return comm !== 'esbuild' && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}
