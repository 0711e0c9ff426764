import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const PERIOD_US = 100_000;

/** A cgroup of this machine's, made for one test, and how to take it away again. */
export interface QuotaGroup {
  readonly dir: string;
  /** Removes the group once the processes started in it have gone (a cgroup with members cannot be removed). */
  remove(): Promise<void>;
}

/**
 * A new cgroup whose CPU quota is `cpus` CPUs (as `docker run --cpus` sets one), under cgroup v1's
 * cpu controller or cgroup v2's, whichever this machine mounts at /sys/fs/cgroup. Needs root.
 */
export function cpuQuotaGroup(cpus: number): QuotaGroup {
  const name = `tps-test-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
  const quota = String(Math.round(cpus * PERIOD_US));
  const v1 = ['/sys/fs/cgroup/cpu', '/sys/fs/cgroup/cpu,cpuacct'].find((d) => fs.existsSync(path.join(d, 'cpu.cfs_quota_us')));
  const v2 = '/sys/fs/cgroup';
  let dir: string;
  if (v1) {
    dir = path.join(v1, name);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    fs.writeFileSync(path.join(dir, 'cpu.cfs_quota_us'), quota);
  } else if (fs.existsSync(path.join(v2, 'cgroup.controllers')) && fs.readFileSync(path.join(v2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('cpu')) {
    if (!fs.readFileSync(path.join(v2, 'cgroup.subtree_control'), 'utf8').split(/\s+/).includes('cpu')) fs.writeFileSync(path.join(v2, 'cgroup.subtree_control'), '+cpu');
    dir = path.join(v2, name);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'cpu.max'), `${quota} ${PERIOD_US}`);
  } else {
    throw new Error('this test needs a cgroup cpu controller it may write to (v1 at /sys/fs/cgroup/cpu, or v2 with cpu in /sys/fs/cgroup/cgroup.controllers), as root');
  }
  return {
    dir,
    async remove() {
      for (let tries = 0; ; tries++) {
        try {
          return fs.rmdirSync(dir);
        } catch (err) {
          // EBUSY while an exited member is still being reaped.
          if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || tries >= 50) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
  };
}
