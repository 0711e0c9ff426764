import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * (f) The disk's floor under (d): what durable commits alone cost on this machine. Writes of (d)'s
 * mean bytes per commit, each followed by fdatasync, one after another as SQLite's one writer
 * commits, due at (d)'s commit rate. Each is counted from the instant it was due, so a slow one
 * delays those behind it, as a slow commit delays the answers queued behind it. The file starts
 * over every 4 MiB, as the WAL does after a checkpoint. Run with nothing else of ours running.
 */
export async function diskFloor(commitsPerSecond: number, bytesPerCommit: number, seconds: number): Promise<{ ok: number; failed: number; seconds: number; latencies: Float64Array }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-disk-'));
  const fd = fs.openSync(path.join(dir, 'commits'), 'w');
  const data = crypto.randomBytes(Math.max(512, Math.round(bytesPerCommit)));
  const wrapAt = Math.max(4 * 2 ** 20, data.length);
  const total = Math.max(1, Math.round(commitsPerSecond * seconds));
  const latencies = new Float64Array(total);
  const interval = 1000 / commitsPerSecond;
  const start = performance.now();
  let offset = 0;
  try {
    for (let i = 0; i < total; i++) {
      const due = start + i * interval;
      // setTimeout is good to a millisecond or so: sleep most of the wait, spin the rest.
      if (due - performance.now() > 2) await new Promise((r) => setTimeout(r, due - performance.now() - 1.5));
      while (performance.now() < due);
      if (offset + data.length > wrapAt) offset = 0;
      fs.writeSync(fd, data, 0, data.length, offset);
      fs.fdatasyncSync(fd);
      offset += data.length;
      latencies[i] = performance.now() - due;
    }
  } finally {
    fs.closeSync(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return { ok: total, failed: 0, seconds: (performance.now() - start) / 1000, latencies };
}
