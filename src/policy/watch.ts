import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../http/logger.js';
import type { ConfigHolder } from './holder.js';
import { isFixtureFile } from './load.js';
import type { ConfigProblem } from './problems.js';

export interface ReloadOutcome {
  ok: boolean;
  /** The configuration version serving after the reload (the old one when it was refused). */
  versionId: string;
  changed: boolean;
  problems: ConfigProblem[];
}

export interface ConfigWatcher {
  /** Reloads now (SIGHUP, or a test); reloads never overlap, and ones asked for meanwhile merge. */
  reload(trigger: string): Promise<ReloadOutcome>;
  close(): void;
}

export interface WatchOptions {
  dir: string;
  logger: Logger;
  /** false: no file watching; reload() still works (SIGHUP). */
  watch: boolean;
  debounceMs: number;
}

/**
 * Hot reload of operations/ and rules/. An edit is compiled by ConfigHolder.reload() to the side
 * and swapped in whole; an invalid edit keeps the last good configuration serving, every problem is
 * logged, and /readyz shows them (ConfigHolder.lastProblems). Editors save in bursts (write, rename,
 * chmod), so file events are debounced into one reload.
 */
export function watchConfig(holder: ConfigHolder, options: WatchOptions): ConfigWatcher {
  const { logger } = options;
  let running: Promise<ReloadOutcome> | undefined;
  let queued: Promise<ReloadOutcome> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const once = async (trigger: string): Promise<ReloadOutcome> => {
    const before = holder.current().versionId;
    try {
      const r = await holder.reload();
      const versionId = r.catalog.versionId;
      if (!r.ok) {
        for (const p of r.problems) logger.warn({ trigger, file: p.file, line: p.line, path: p.path, problem: p.message }, 'configuration problem');
        logger.warn({ trigger, problems: r.problems.length, versionId }, 'configuration reload refused; the last good configuration keeps serving');
      } else if (versionId !== before) {
        logger.info({ trigger, versionId, previous: before, policies: [...r.catalog.policies.values()].map((p) => `${p.id}@${p.versionId}`) }, 'configuration reloaded');
      } else logger.debug({ trigger, versionId }, 'configuration unchanged');
      return { ok: r.ok, versionId, changed: versionId !== before, problems: r.problems };
    } catch (err) {
      // E.g. the store could not remember the new policy versions: nothing was swapped.
      logger.error({ trigger, err: { message: (err as Error).message } }, 'configuration reload failed; the last good configuration keeps serving');
      return { ok: false, versionId: before, changed: false, problems: [...holder.lastProblems()] };
    }
  };

  const reload = (trigger: string): Promise<ReloadOutcome> => {
    if (!running) {
      running = once(trigger).finally(() => (running = undefined));
      return running;
    }
    // One reload runs; every request made meanwhile shares the single one that follows it, which
    // reads the files as they are by then.
    queued ??= running.then(() => {
      queued = undefined;
      return reload(trigger);
    });
    return queued;
  };

  const watchers: fs.FSWatcher[] = [];
  if (options.watch) {
    const onEvent = (_event: string, filename: string | Buffer | null) => {
      const name = filename?.toString();
      if (closed || (name && (!/\.ya?ml$/.test(name) || isFixtureFile(name)))) return;
      clearTimeout(timer);
      timer = setTimeout(() => void reload('watch'), options.debounceMs);
    };
    for (const sub of ['operations', 'rules']) {
      const dir = path.join(options.dir, sub);
      try {
        const w = fs.watch(dir, { persistent: false }, onEvent);
        w.on('error', (err) => logger.warn({ dir, err: { message: err.message } }, 'configuration watch stopped; SIGHUP still reloads'));
        watchers.push(w);
      } catch (err) {
        logger.warn({ dir, err: { message: (err as Error).message } }, 'cannot watch configuration folder; SIGHUP still reloads');
      }
    }
  }

  return {
    reload,
    close() {
      closed = true;
      clearTimeout(timer);
      for (const w of watchers) w.close();
    },
  };
}
