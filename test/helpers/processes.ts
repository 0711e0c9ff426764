import fs from 'node:fs';
import http from 'node:http';
import { spawnScript } from './script.js';

/** The pids of a process's children, from /proc (tsx's esbuild service left out: not a worker). */
export function childrenOf(pid: number): number[] {
  return fs
    .readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
        const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        return comm !== 'esbuild' && Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A script's process, handed back at once, for a test that acts while it starts. */
export interface Spawned {
  readonly pid: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Once `pattern` (global) has matched `times` times in stdout, every match; an error if it exits first. */
  logged(pattern: RegExp, times?: number): Promise<RegExpMatchArray[]>;
  /** Once stderr matches. */
  said(pattern: RegExp): Promise<RegExpMatchArray>;
  /** Its exit code, or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(signal: NodeJS.Signals): void;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawned(file: string, env: Record<string, string>): Spawned {
  const child = spawnScript(file, [], env);
  const out = { stdout: '', stderr: '' };
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const waitFor = <T>(stream: 'stdout' | 'stderr', found: () => T | undefined, what: string) =>
    new Promise<T>((resolve, reject) => {
      const look = () => {
        const value = found();
        if (value === undefined) return;
        child[stream].off('data', look);
        resolve(value);
      };
      child[stream].on('data', look);
      void exited.then(({ code, signal }) => reject(new Error(`${file} ended (${code ?? signal}) before printing ${what}:\n${out.stderr}${out.stdout}`)));
      look();
    });
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  return {
    pid: child.pid!,
    get stdout() {
      return out.stdout;
    },
    get stderr() {
      return out.stderr;
    },
    logged: (pattern, times = 1) =>
      waitFor(
        'stdout',
        () => {
          const all = [...out.stdout.matchAll(new RegExp(pattern.source, pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`))];
          return all.length >= times ? all : undefined;
        },
        `${pattern} ${times} time(s)`,
      ),
    said: (pattern) => waitFor('stderr', () => out.stderr.match(pattern) ?? undefined, String(pattern)),
    exited,
    signal: (signal) => void child.kill(signal),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** The real server (src/server.ts) as startServer runs it, handed back before it listens. */
export const spawnedServer = (env: Record<string, string>): Spawned => spawned('src/server.ts', { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env });

/** The JSON log lines with this message. */
export const logLines = (stdout: string, msg: string): Record<string, any>[] =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes(`"msg":${JSON.stringify(msg)}`))
    .map((l) => JSON.parse(l));

/** A GET on a connection of its own, so that a cluster may hand it to any worker; the body parsed. */
export function getJson(port: number, route: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: route, agent: false }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(body) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}
