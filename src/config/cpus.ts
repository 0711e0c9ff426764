import fs from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';

/**
 * The CPUs this process may use, as `TPS_EVALUATE_THREAD=auto` counts them: its affinity mask
 * (`os.availableParallelism()`), and below that a CPU quota of its cgroup, rounded down, at least
 * one. Node 20's libuv (1.46) reads the mask only, so a container run with `--cpus=1` on a
 * many-core host would count the host's CPUs; libuv 1.49 (Node 22) reads the quota as this does.
 */
export function usableCpus(root = '/'): number {
  const quota = cgroupCpuQuota(root);
  const cpus = availableParallelism();
  return quota === undefined ? cpus : Math.min(cpus, Math.max(1, Math.floor(quota)));
}

/**
 * The tightest CPU quota over this process's cgroup and its ancestors, in CPUs (quota / period),
 * or undefined where none is set or none can be read. cgroup v2: `cpu.max` ("max 100000" or
 * "150000 100000"); v1: `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`. `root` is the
 * file system's root, another directory in tests.
 */
export function cgroupCpuQuota(root = '/'): number | undefined {
  const membership = readText(path.join(root, 'proc/self/cgroup'));
  if (membership === undefined) return undefined;
  let tightest: number | undefined;
  for (const line of membership.split('\n')) {
    // hierarchy-id:controllers:path (the path may hold colons); v2's line is "0::/path".
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const cgroup = line.slice(second + 1);
    const v2 = line.slice(0, first) === '0' && controllers === '';
    if (!v2 && !controllers.split(',').includes('cpu')) continue;
    const mount = path.join(root, 'sys/fs/cgroup', v2 ? '' : controllers);
    for (let dir = path.join(mount, cgroup); ; dir = path.dirname(dir)) {
      const quota = v2 ? cpuMax(dir) : cfsQuota(dir);
      if (quota !== undefined && (tightest === undefined || quota < tightest)) tightest = quota;
      if (dir === mount || !dir.startsWith(mount)) break;
    }
  }
  return tightest;
}

function cpuMax(dir: string): number | undefined {
  const [quota, period] = (readText(path.join(dir, 'cpu.max')) ?? '').trim().split(/\s+/);
  return ratio(quota, period);
}

function cfsQuota(dir: string): number | undefined {
  return ratio(readText(path.join(dir, 'cpu.cfs_quota_us'))?.trim(), readText(path.join(dir, 'cpu.cfs_period_us'))?.trim());
}

// "max", -1, a missing file or a zero period: no quota here.
function ratio(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? q / p : undefined;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
