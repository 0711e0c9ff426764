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

/** The real server as `npm start` runs it (src/server.ts), in a process of its own on loopback. */
export interface ServerProcess {
  /** Its process id (with TPS_WORKERS > 1, the primary's). */
  readonly pid: number;
  /** The port it listens on, as it logged it; 0 when it exited before listening. */
  port: number;
  /** Its exit code when it stopped before listening (a refused start-up); null while it runs. */
  code: number | null;
  /** What it has printed so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** The first match of the pattern in what it has printed, now or later; an error if it ends first. */
  logged(pattern: RegExp): Promise<RegExpMatchArray>;
  /** The port of the `url` in the first log line with this message, as logged(). */
  loggedPort(msg: string): Promise<number>;
  /** Sends the signal and goes on (SIGHUP: reload the configuration). */
  signal(signal: NodeJS.Signals): void;
  /** Sends the signal unless it has already exited, and resolves with its exit code once it has. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// The closing quotes keep a line cut between two chunks from matching half a port. The message is
// matched as the log line spells it (JSON, quotes included), as text rather than as a pattern.
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const urlBeside = (msg: string) => new RegExp(`"url":"(http:[^"]+)"[^\\n]*"msg":${literal(JSON.stringify(msg))}`);

/**
 * Starts the server with these environment variables (over PORT=0, HOST and LOG_LEVEL=info);
 * resolves once it listens, or once it has exited. The port is the one it logs: a port picked
 * here could be taken by then (most likely what failed a CI run once).
 */
export async function startServer(env: Record<string, string>, place?: Placement): Promise<ServerProcess> {
  const child = spawnScript('src/server.ts', [], { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, place);
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': by then everything it printed has been read.
  const ended = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const server: ServerProcess = {
    pid: child.pid!,
    port: 0,
    code: null,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    logged(pattern) {
      return new Promise((resolve, reject) => {
        // Added after the listener that appends, so it sees each chunk appended.
        const look = () => {
          const match = stdout.match(pattern);
          if (!match) return;
          child.stdout.off('data', look);
          resolve(match);
        };
        child.stdout.on('data', look);
        void ended.then((code) => reject(new Error(`the server exited with ${code} before printing ${pattern}:\n${stderr}${stdout}`)));
        look();
      });
    },
    async loggedPort(msg) {
      return Number(new URL((await server.logged(urlBeside(msg)))[1]!).port);
    },
    signal(signal) {
      child.kill(signal);
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return ended;
    },
  };
  try {
    server.port = await server.loggedPort('TPS listening');
  } catch {
    server.code = await ended;
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
