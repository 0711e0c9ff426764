import { open } from 'node:fs/promises';
import type { Knex } from 'knex';
import { CheckpointLog } from './checkpointLog.js';

/** How often the WAL is copied back into the database file, from a connection of its own. */
export const CHECKPOINT_MS = 100;
/** Once the WAL holds this many MiB of frames, the writer's connection catches up, so that the WAL starts over (TPS_SQLITE_WAL_MB). */
export const WAL_CATCH_UP_MB = 32;
/** A WAL frame: a 24-byte header, then the page. */
const FRAME_HEADER = 24;

export interface CheckpointerOptions {
  /** Called with the seconds each catch-up held the writer's connection (metrics). */
  onCheckpoint?: (seconds: number) => void;
  /** The WAL's size in MiB that makes the writer catch up; WAL_CATCH_UP_MB unless set. */
  walMb?: number;
  /** Where each bulk, file sync and catch-up is logged as it runs (Server-Timing); one of its own unless given. */
  log?: CheckpointLog;
}

/**
 * SQLite's WAL, copied back into the database file in two parts (SQLite never checkpoints on its
 * own: left to it, every ~1000 pages one commit would also copy them back and sync the database,
 * tens of milliseconds in which nothing is answered).
 *
 * - **The bulk**, every CHECKPOINT_MS, from a connection of its own: a PASSIVE checkpoint copies
 *   the frames committed so far into the file while the writer goes on committing. SQLite syncs
 *   the file only after a checkpoint that reached the WAL's end, which under steady commits the
 *   bulk never does, so before each catch-up the checkpointer syncs the file itself, from a
 *   descriptor of its own: the pages the bulks wrote reach the disk while commits go on. When the
 *   writer pauses long enough for a bulk to reach the WAL's end, SQLite starts the WAL over at the
 *   next commit by itself.
 * - **The catch-up**, once a bulk finds WAL_CATCH_UP_MB of frames in the WAL, on the writer's own
 *   connection, between two commits: it copies the few frames committed since the bulk began and
 *   syncs the file. With every frame copied and no writer in between, the next commit writes the
 *   WAL from its start again. The bulk alone never gets there under steady commits: a writer that
 *   never pauses always adds frames while it copies, and the WAL would only grow (past 200 MB in a
 *   10-second benchmark). Only the catch-up holds the writer, so only it is reported to
 *   `onCheckpoint` (the metric of what commits wait behind). It costs the commits behind it its
 *   two syncs (1.5–4 ms) however few frames it copies, so it runs as seldom as the WAL's size
 *   allows: about once a second under full load, every few seconds at light load, rather than on
 *   a fixed half-second beat (bench/ROUNDS.md, twentieth round). Without the sync before it, its
 *   own sync wrote the bulks' pages with the writer held: 7.2–10.0 ms a catch-up at 50% load,
 *   against 3.8–4.4 ms with it (twelfth round).
 *
 * A reader holding an old snapshot (a long search or export) keeps the frames after it until it
 * ends; PASSIVE never waits for it. A tick that finds the last one still running skips; one that
 * fails (the database busy or gone) is simply tried again at the next tick. `bulk` is the
 * checkpointer's alone: stop() closes it once the tick in flight has ended.
 */
export function checkpointer(writer: Knex, bulk: Knex, file: string, options: CheckpointerOptions = {}): { stop(): Promise<void> } {
  const { onCheckpoint, walMb = WAL_CATCH_UP_MB, log = new CheckpointLog() } = options;
  let running: Promise<void> | undefined;
  // In frames of the file's own page size: a store made with 4 KiB pages keeps them (db.ts).
  let catchUpFrames: number | undefined;
  // Only a head start for the catch-up's own sync, so a failure (the file gone) is ignored and the
  // catch-up runs either way. Opened each time: at most about once a second, and nothing to keep or close.
  const syncFile = async () => {
    const handle = await open(file, 'r').catch(() => undefined);
    await handle?.datasync().catch(() => undefined);
    await handle?.close().catch(() => undefined);
  };
  const tick = async () => {
    if (catchUpFrames === undefined) {
      const [{ page_size: pageSize }] = (await bulk.raw('PRAGMA page_size')) as [{ page_size: number }];
      catchUpFrames = Math.max(1, Math.floor((walMb * 2 ** 20) / (pageSize + FRAME_HEADER)));
    }
    const [state] = (await log.span('bulk', () => bulk.raw('PRAGMA wal_checkpoint(PASSIVE)'))) as [{ log: number }];
    if (state.log < catchUpFrames) return;
    await log.span('filesync', syncFile);
    // Counted from the moment it is queued: the wait for the commit ahead is part of what the
    // commits queued behind it see.
    const start = performance.now();
    await log.span('catchup', () => writer.raw('PRAGMA wal_checkpoint(PASSIVE)'), start);
    onCheckpoint?.((performance.now() - start) / 1000);
  };
  const timer = setInterval(() => {
    if (running) return;
    running = tick()
      .catch(() => undefined)
      .finally(() => (running = undefined));
  }, CHECKPOINT_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
      await bulk.destroy();
    },
  };
}
