import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../http/logger.js';
import type { ConfigHolder } from './holder.js';
import { CONFIG_FOLDERS, configDigest, isConfigFile, loadConfigDirOrProblem, type LoadedConfig } from './load.js';
import type { ConfigProblem } from './problems.js';

export interface ReloadOutcome {
  ok: boolean;
  /** The configuration version serving after the reload (the old one when it was refused). */
  versionId: string;
  changed: boolean;
  problems: ConfigProblem[];
  /** The files kept changing while read: nothing was compiled; the write's next file event reloads. */
  postponed?: boolean;
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
  /** How long the files, once read, must stay as read before a watched change is compiled; 0: no wait. */
  settleMs: number;
  /** How often the folders' identity is checked (TPS_CONFIG_DIR a symlink flipped to another folder). */
  recheckMs?: number;
}

/** Reads of a watched change, each settleMs apart, before a reload gives up to the write's next event. */
const SETTLE_TRIES = 20;
const RECHECK_MS = 2000;

/**
 * Where a folder really is, and which folder it is: another folder moved or copied in its place
 * differs (by its birth time too, since a folder deleted and re-created may get the same inode).
 * Where the filesystem keeps no birth time, Node may give the change time in its place, which
 * every file saved in the folder moves: then the birth time is left out (an event naming a folder
 * re-arms the watch anyway).
 */
function identity(dir: string): string {
  const of = (p: string) => {
    try {
      const st = fs.statSync(p);
      const born = st.birthtimeMs !== st.ctimeMs ? `:${st.birthtimeMs}` : '';
      return `${fs.realpathSync(p)}:${st.dev}:${st.ino}${born}`;
    } catch {
      return 'missing';
    }
  };
  return [dir, ...CONFIG_FOLDERS.map((f) => path.join(dir, f))].map(of).join('|');
}

/**
 * Hot reload of operations/ and rules/. An edit is compiled by ConfigHolder.reload() to the side
 * and swapped in whole; an invalid edit keeps the last good configuration serving, every problem is
 * logged, and /readyz shows them (ConfigHolder.lastProblems). Editors save in bursts (write, rename,
 * chmod), so file events are debounced into one reload, and a watched change is compiled only once
 * the files read stay unchanged for settleMs: a writer that pauses mid-file leaves a prefix that may
 * well compile. fs.watch follows a folder's inode, not its name, so a folder replaced (moved, deleted
 * and copied back, TPS_CONFIG_DIR's symlink flipped) is watched again under its name.
 */
export function watchConfig(holder: ConfigHolder, options: WatchOptions): ConfigWatcher {
  const { logger } = options;
  let running: Promise<ReloadOutcome> | undefined;
  let queued: Promise<ReloadOutcome> | undefined;
  let queuedSettles = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  // Ends a settle wait at close(): its timer would otherwise keep a closing process alive for settleMs.
  const closing = new AbortController();
  /** false once the watcher closed. */
  const settleWait = () => sleep(options.settleMs, true, { signal: closing.signal }).catch(() => false);

  /**
   * The files once they stopped changing, or undefined when they kept changing (or the watcher
   * closed). They are looked at without holding the thread (configDigest), and compiled only
   * once they have stayed as they were for settleMs: evaluations go on while a file is written.
   */
  const settledLoad = async (trigger: string): Promise<LoadedConfig | undefined> => {
    if (closed) return undefined;
    logger.debug({ trigger, settleMs: options.settleMs }, 'configuration files changed; waiting for them to settle');
    let seen = await configDigest(options.dir);
    for (let i = 0; i < SETTLE_TRIES; i++) {
      if (!(await settleWait())) return undefined;
      const now = await configDigest(options.dir);
      if (now === seen) {
        // Read again to compile: the same files, unless a write came in between (then wait again).
        // A load that throws is refused as the reload's one problem, not a failure beside it.
        const loaded = loadConfigDirOrProblem(options.dir, { prefix: 'reload failed: ', digest: now });
        if (loaded.digest === now) return loaded;
        seen = loaded.digest;
      } else seen = now;
      logger.info({ trigger, settleMs: options.settleMs }, 'configuration files still changing; reload postponed until they settle');
    }
    return undefined;
  };

  const once = async (trigger: string, settle: boolean): Promise<ReloadOutcome> => {
    const before = holder.current().versionId;
    try {
      let loaded: LoadedConfig | undefined;
      if (settle && options.settleMs > 0) {
        loaded = await settledLoad(trigger);
        if (!loaded) {
          if (!closed) logger.warn({ trigger, tries: SETTLE_TRIES }, 'configuration files kept changing; the current configuration serves until their next change');
          return { ok: false, versionId: before, changed: false, problems: [...holder.lastProblems()], postponed: true };
        }
      }
      const r = await holder.reload(loaded);
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

  const reload = (trigger: string, settle: boolean): Promise<ReloadOutcome> => {
    if (!running) {
      running = once(trigger, settle).finally(() => (running = undefined));
      return running;
    }
    // One reload runs; every request made meanwhile shares the single one that follows it, which
    // reads the files as they are by then (and waits for them to settle if any request was a watched change).
    queuedSettles ||= settle;
    queued ??= running.then(() => {
      queued = undefined;
      const settles = queuedSettles;
      queuedSettles = false;
      return reload(trigger, settles);
    });
    return queued;
  };

  let watchers: fs.FSWatcher[] = [];
  let watched = '';
  /** A watch stopped on an error: the next check watches again, and reloads (an edit may have come meanwhile). */
  let broken = false;
  let recheck: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(() => void reload('watch', true), options.debounceMs);
  };
  const watch = (dir: string, onEvent: (event: string, filename: string | Buffer | null) => void, first: boolean) => {
    try {
      const w = fs.watch(dir, { persistent: false }, onEvent);
      w.on('error', (err) => {
        logger.warn({ dir, err: { message: err.message } }, 'configuration watch stopped; watching again at the next check');
        broken = true;
      });
      watchers.push(w);
    } catch (err) {
      // Later than start, a folder missing is one being replaced: the watch of TPS_CONFIG_DIR sees it come back.
      if (first) logger.warn({ dir, err: { message: (err as Error).message } }, 'cannot watch configuration folder; SIGHUP still reloads');
      else logger.debug({ dir, err: { message: (err as Error).message } }, 'configuration folder missing');
    }
  };
  const arm = (now: string, first = false) => {
    for (const w of watchers) w.close();
    watchers = [];
    watched = now;
    broken = false;
    watch(options.dir, onDirEvent, first);
    for (const sub of CONFIG_FOLDERS) watch(path.join(options.dir, sub), onFileEvent, first);
  };
  /**
   * Watches the folders again, and reloads, once one is not the folder watched any more; at once
   * (`sure`) on an event naming a folder, which its identity may not tell (a reused inode).
   */
  const check = (reason: string, sure = false) => {
    if (closed) return;
    const now = identity(options.dir);
    if (now === watched && !sure) {
      if (broken) {
        // An edit saved while the watch was down told no one: a reload of unchanged files changes nothing.
        arm(now);
        schedule();
      }
      return;
    }
    logger[now === watched ? 'debug' : 'info']({ dir: options.dir, reason }, 'configuration folders replaced; watching them again');
    arm(now);
    schedule();
  };
  function onFileEvent(_event: string, filename: string | Buffer | null) {
    const name = filename?.toString();
    if (closed) return;
    // An event naming the watched folder itself: it was moved or deleted, and this watch with it.
    if (name && CONFIG_FOLDERS.includes(name)) return check('folder event', true);
    // Fixtures, hidden files (an editor's lock file) and other names are not loaded: no reload.
    if (name && !isConfigFile(name)) return;
    schedule();
  }
  function onDirEvent(_event: string, filename: string | Buffer | null) {
    const name = filename?.toString();
    if (!name || CONFIG_FOLDERS.includes(name)) check('folder event', true);
  }
  if (options.watch) {
    arm(identity(options.dir), true);
    // No event tells of a symlinked TPS_CONFIG_DIR flipped to another folder (ln -sfn): a cheap look now and then does.
    recheck = setInterval(() => check('periodic check'), options.recheckMs ?? RECHECK_MS);
    recheck.unref();
  }

  return {
    reload: (trigger) => reload(trigger, false),
    close() {
      closed = true;
      closing.abort();
      clearTimeout(timer);
      clearInterval(recheck);
      for (const w of watchers) w.close();
    },
  };
}
