import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/** A port the OS says is free right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * The node flags `npm start` runs the service with: its script (package.json) between `node` and
 * the file it starts.
 */
export function startFlags(startScript: string): string[] {
  const words = startScript.trim().split(/\s+/);
  if (words[0] !== 'node' || words.length < 2) throw new Error(`the start script is not "node [flags] file": ${startScript}`);
  return words.slice(1, -1);
}

/** The node flags of `npm start` in the checkout at `root`. */
export function npmStartFlags(root: string): string[] {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  return startFlags(pkg.scripts.start);
}

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

/**
 * Starts `node …args` with `env` added; its stderr (and stdout, if `echo`) is passed through.
 * `priority` (a nice value; below 0 needs root) is inherited by the processes it forks.
 */
export function startNode(args: string[], env: Record<string, string>, priority?: number, echo = false): Child {
  const proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  if (priority !== undefined) os.setPriority(proc.pid!, priority);
  proc.stdout!.on('data', (chunk: Buffer) => {
    if (echo) process.stderr.write(chunk);
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    pid: proc.pid!,
    async stop(graceMs = 60_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Polls GET url until it answers 200 or the child dies. */
export async function waitReady(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`the process exited with code ${child.proc.exitCode} before answering ${url}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

/** The process and its descendants (cluster workers), from /proc. */
function tree(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    } catch {
      /* the process ended while we looked */
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++) out.push(...(parents.get(out[i]!) ?? []));
  return out;
}

/** The sum of `read` over `ids`, leaving out any that fails: a process or thread that ended while we looked, or one not ours to read. */
function sum(ids: readonly (number | string)[], read: (id: number | string) => number): number {
  let total = 0;
  for (const id of ids) {
    try {
      total += read(id);
    } catch {
      /* gone */
    }
  }
  return total;
}

/** CPU seconds (user + system) used so far by the process plus its descendants. */
export function cpuSeconds(pid: number | 'self'): number {
  return sum(pid === 'self' ? [process.pid] : tree(pid), (p) => statCpuSeconds(`/proc/${p}/stat`));
}

/** User plus system time from a process's or a thread's stat file, in seconds. */
function statCpuSeconds(file: string): number {
  const ticks = 100; // USER_HZ, 100 on Linux
  const stat = fs.readFileSync(file, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / ticks;
}

/**
 * Context switches so far of every thread of the process plus its descendants, voluntary (a thread
 * that slept, woken later) and not (one preempted). A thread that ended takes its count with it.
 */
export function contextSwitches(pid: number): number {
  return sum(tree(pid), (p) =>
    sum(fs.readdirSync(`/proc/${p}/task`), (t) => {
      const status = fs.readFileSync(`/proc/${p}/task/${t}/status`, 'utf8');
      return [...status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    }),
  );
}

/** Whether the kernel keeps schedstat (CONFIG_SCHED_INFO), which coreWaitSeconds reads. */
export const KEEPS_SCHEDSTAT = fs.existsSync('/proc/self/schedstat');

/**
 * Seconds every thread of the process plus its descendants has spent runnable but waiting for a
 * core (the second field of /proc/PID/task/TID/schedstat: from being woken or preempted to running
 * again); undefined where the kernel keeps no schedstat. A thread that ended takes its time with it.
 */
export function coreWaitSeconds(pid: number): number | undefined {
  if (!KEEPS_SCHEDSTAT) return undefined;
  return sum(tree(pid), (p) => [...threadCounters(Number(p)).values()].reduce((total, t) => total + t.waitSeconds!, 0));
}

/** One thread's counters so far: its name (comm), CPU seconds, and from schedstat, where kept, seconds waiting for a core and times scheduled. */
export interface ThreadCounters {
  name: string;
  cpuSeconds: number;
  waitSeconds?: number;
  scheduled?: number;
}

/** Every thread of the process itself (not its descendants), by thread id; one that ended while we looked is left out. */
export function threadCounters(pid: number): Map<number, ThreadCounters> {
  const out = new Map<number, ThreadCounters>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const dir = `/proc/${pid}/task/${tid}`;
      const name = fs.readFileSync(`${dir}/comm`, 'utf8').trim();
      if (KEEPS_SCHEDSTAT) {
        // Run time and wait in ns, then times scheduled: finer than stat's 10 ms ticks.
        const [run, wait, scheduled] = fs.readFileSync(`${dir}/schedstat`, 'utf8').split(' ').map(Number);
        out.set(Number(tid), { name, cpuSeconds: run! / 1e9, waitSeconds: wait! / 1e9, scheduled });
      } else {
        out.set(Number(tid), { name, cpuSeconds: statCpuSeconds(`${dir}/stat`) });
      }
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Bytes the process plus its descendants have caused to be written to storage (/proc/PID/io write_bytes). */
export function writtenBytes(pid: number): number {
  return sum(tree(pid), (p) => Number(/^write_bytes:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${p}/io`, 'utf8'))?.[1] ?? 0));
}

/** CPU seconds the whole machine has spent busy and idle so far (all cores, from /proc/stat). */
export function machineSeconds(): { busy: number; idle: number } {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: idle is idle and iowait, busy everything else.
  const idle = f[3]! + f[4]!;
  return { busy: (f.reduce((a, b) => a + b, 0) - idle) / 100, idle: idle / 100 };
}

/** VmRSS of the process plus its descendants, in MB (MiB). */
export function rssMb(pid: number): number {
  const kb = sum(tree(pid), (p) => Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0));
  return Math.round((kb / 1024) * 10) / 10;
}
