import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { cgroupCpuQuota, usableCpus } from '../../src/config/cpus.js';

/** A file-system root of its own: `files` by path under it, removed after the test. */
function rootWith(t: ExecutionContext, files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-cpus-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const allowed = os.availableParallelism();
const v1 = (dir: string, quota: number, period = 100000) => ({ [`${dir}/cpu.cfs_quota_us`]: `${quota}\n`, [`${dir}/cpu.cfs_period_us`]: `${period}\n` });

// Each machine as /proc/self/cgroup and the cgroup files show it; the quota found, in CPUs, and what auto counts.
const quotas: { name: string; files: Record<string, string>; quota: number | undefined; cpus: number }[] = [
  {
    name: 'cgroup v2: the tightest cpu.max from the process cgroup up to the mount',
    files: {
      'proc/self/cgroup': '0::/kubepods/pod1/app\n',
      'sys/fs/cgroup/kubepods/cpu.max': 'max 100000\n',
      'sys/fs/cgroup/kubepods/pod1/cpu.max': '150000 100000\n',
      'sys/fs/cgroup/kubepods/pod1/app/cpu.max': 'max 100000\n',
    },
    quota: 1.5,
    cpus: 1,
  },
  {
    name: 'cgroup v1: cpu.cfs_quota_us over cpu.cfs_period_us, under the controllers its cgroup line names',
    files: { 'proc/self/cgroup': '12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n', ...v1('sys/fs/cgroup/cpu,cpuacct', -1), ...v1('sys/fs/cgroup/cpu,cpuacct/docker/abc', 300000) },
    quota: 3,
    cpus: Math.min(3, allowed),
  },
  // Inside a container the cgroup line names the host's path, which the container's mount does not
  // hold: the walk goes up to the mount, the container's own cgroup. Half a CPU is still one to run on.
  { name: "a cgroup path the mount does not hold is read at the mount's root", files: { 'proc/self/cgroup': '3:cpu:/docker/0123abcd\n', ...v1('sys/fs/cgroup/cpu', 50000) }, quota: 0.5, cpus: 1 },
  { name: 'a quota above the CPUs allowed leaves the affinity mask', files: { 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cpu.max': `${(allowed + 4) * 100000} 100000\n` }, quota: allowed + 4, cpus: allowed },
  { name: 'no quota: "max"', files: { 'proc/self/cgroup': '0::/app\n', 'sys/fs/cgroup/app/cpu.max': 'max 100000\n' }, quota: undefined, cpus: allowed },
  { name: 'no quota: -1', files: { 'proc/self/cgroup': '2:cpu:/\n', ...v1('sys/fs/cgroup/cpu', -1) }, quota: undefined, cpus: allowed },
  { name: 'no quota: a zero period', files: { 'proc/self/cgroup': '0::/\n', 'sys/fs/cgroup/cpu.max': '100000 0\n' }, quota: undefined, cpus: allowed },
  { name: 'no quota: no cpu controller', files: { 'proc/self/cgroup': '4:memory:/a\n1:name=systemd:/a\n', 'sys/fs/cgroup/memory/a/cpu.max': '100000 100000\n' }, quota: undefined, cpus: allowed },
  { name: 'no quota: no /proc at all', files: {}, quota: undefined, cpus: allowed },
];

for (const { name, files, quota, cpus } of quotas) {
  test(name, (t) => {
    const root = rootWith(t, files);
    t.is(cgroupCpuQuota(root), quota);
    t.is(usableCpus(root), cpus);
  });
}
