import { open } from 'node:fs/promises';
import type { Knex } from 'knex';

/** How often the WAL is copied back into the database file, from a connection of its own. */
export const CHECKPOINT_MS = 100;
/** Every this many checkpoints, the writer's connection catches up, so that the WAL starts over. */
export const CATCH_UP_EVERY = 5;
/** Or at once, when the WAL has grown past this many frames (32 MiB of 1 KiB pages). */
const CATCH_UP_FRAMES = 32_768;

/**
 * SQLite's WAL, copied back into the database file in two parts (SQLite never checkpoints on its
 * own: left to it, every ~1000 pages one commit would also copy them back and sync the database,
 * tens of milliseconds in which nothing is answered).
 *
 * - **The bulk**, every CHECKPOINT_MS, from a connection of its own: a PASSIVE checkpoint copies
 *   the frames committed so far into the file while the writer goes on committing. SQLite syncs
 *   the file only after a checkpoint that reached the WAL's end, which under steady commits the
 *   bulk never does, so before each catch-up the checkpointer syncs the file itself, from a
 *   descriptor of its own: the pages the bulks wrote reach the disk while commits go on.
 * - **The catch-up**, every CATCH_UP_EVERY ticks, on the writer's own connection, between two
 *   commits: it copies the few frames committed since the bulk began and syncs the file. With
 *   every frame copied and no writer in between, the next commit writes the WAL from its start
 *   again. The bulk alone never gets there: a writer that never pauses always adds frames while it
 *   copies, and the WAL would only grow (past 200 MB in a 10-second benchmark). Only the catch-up
 *   holds the writer, so only it is reported to `onCheckpoint` (the metric of what commits wait
 *   behind). Without the sync before it, its own sync wrote half a second of the bulks' pages
 *   with the writer held: 7.2–10.0 ms a catch-up at 50% load, against 3.8–4.4 ms with it
 *   (bench/ROUNDS.md, twelfth round).
 *
 * A reader holding an old snapshot (a long search or export) keeps the frames after it until it
 * ends; PASSIVE never waits for it. A tick that finds the last one still running skips; one that
 * fails (the database busy or gone) is simply tried again at the next tick. `bulk` is the
 * checkpointer's alone: stop() closes it once the tick in flight has ended.
 */
export function checkpointer(writer: Knex, bulk: Knex, file: string, onCheckpoint?: (seconds: number) => void): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  let ticks = 0;
  // Only a head start for the catch-up's own sync, so a failure (the file gone) is ignored and the
  // catch-up runs either way. Opened each time: twice a second, and nothing to keep or close.
  const syncFile = async () => {
    const handle = await open(file, 'r').catch(() => undefined);
    await handle?.datasync().catch(() => undefined);
    await handle?.close().catch(() => undefined);
  };
  const tick = async () => {
    const [state] = (await bulk.raw('PRAGMA wal_checkpoint(PASSIVE)')) as [{ log: number }];
    if (++ticks < CATCH_UP_EVERY && state.log < CATCH_UP_FRAMES) return;
    ticks = 0;
    await syncFile();
    // Counted from the moment it is queued: the wait for the commit ahead is part of what the
    // commits queued behind it see.
    const start = performance.now();
    await writer.raw('PRAGMA wal_checkpoint(PASSIVE)');
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
