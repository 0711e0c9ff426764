import type { Settings } from '../config/env.js';
import type { Dialect } from '../store/dialect.js';

export interface Machine {
  dialect: Dialect;
  /** CPUs this process may use (config/cpus.ts: its affinity mask, and a cgroup CPU quota below it). */
  cpus: number;
  /** TPS_WORKERS: processes sharing those CPUs, each with its own HTTP thread. */
  workers: number;
}

/**
 * Whether evaluate runs in a thread of its own (TPS_EVALUATE_THREAD). `auto` takes the thread with
 * SQLite, where the HTTP thread is the limit, and only where each process's two busy threads get a
 * core each: on one CPU the thread only adds hand-offs, and two workers on two vCPUs ran 1.19× the
 * evaluations without their threads (bench/ROUNDS.md, fifty-third round). With PostgreSQL on a
 * small shared machine a second busy thread took the backend's CPU.
 */
export function evaluatesInThread(setting: Settings['evaluateThread'], machine: Machine): boolean {
  if (setting !== 'auto') return setting === 'true';
  return machine.dialect === 'sqlite' && machine.cpus >= 2 * machine.workers;
}
