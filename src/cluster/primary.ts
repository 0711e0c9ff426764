import cluster, { type Worker } from 'node:cluster';
import { localUrl, type Settings } from '../config/env.js';
import type { Logger } from '../http/logger.js';
import { createMetrics } from '../http/metrics.js';
import { isPostgresUrl, openDatabase } from '../store/db.js';
import { sqliteEventWriter } from '../store/eventWriteTx.js';
import { commitWorkersEvents } from './eventCommits.js';
import { aggregateWorkersMetrics } from './metrics.js';

/**
 * TPS_WORKERS > 1 (node:cluster). The primary prepares the store once (migrations, key bootstrap,
 * policy versions: `prepare`), then forks the workers; each builds its own service and listens on
 * the same port, and the primary hands connections out. The primary serves no request itself.
 * SIGTERM and SIGINT stop the workers gracefully (each drains its group commit first), SIGHUP is
 * passed on to them, and a worker that dies after it started is replaced. With SQLite the primary
 * also commits the workers' events, as the file's one writer (eventCommits.ts), and it gathers
 * every worker's metrics for each worker's `/metrics` (metrics.ts).
 */
export async function runPrimary(settings: Settings, logger: Logger, prepare: () => Promise<void>): Promise<void> {
  // Challenges and velocity counts must be seen by every worker, or a step-up retry that lands on
  // another worker than its challenge would fail: several workers share state through Redis.
  if (!settings.redisUrl) throw new Error(`TPS_WORKERS=${settings.workers} needs REDIS_URL: step-up challenges and velocity counts are shared between workers through Redis`);
  await prepare();
  // Its own metrics join the workers' in every scrape: its process, and with SQLite its checkpoints.
  const metrics = createMetrics();
  // The primary keeps a store only as SQLite's one event writer; PostgreSQL's workers commit their own.
  const writerDb = isPostgresUrl(settings.databaseUrl)
    ? undefined
    : await openDatabase(settings.databaseUrl, {
        migrate: false,
        sqliteSync: settings.sqliteSync,
        sqliteWalMb: settings.sqliteWalMb,
        sqlitePageSize: settings.sqlitePageSize,
        onCheckpoint: (seconds) => metrics.checkpointSeconds.observe(seconds),
      });
  if (writerDb) commitWorkersEvents(sqliteEventWriter(writerDb.knex), settings.workers);
  // Structured clone rather than JSON: a batch's rows are JSON text, which JSON would escape again,
  // and the stored rows that ingest reads back carry Buffers.
  cluster.setupPrimary({ serialization: 'advanced' });

  let stopping = false;
  const listening = new Set<Worker>();
  aggregateWorkersMetrics(metrics.registry, () => [...listening]);
  const fork = () => cluster.fork({ TPS_CLUSTER_WORKER: '1' });

  // The port the workers share, which PORT=0 leaves to the system (the same for every worker).
  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    if (listening.size === settings.workers) logger.info({ workers: settings.workers, url: localUrl(settings.host, address.port) }, 'TPS workers listening');
  });
  cluster.on('exit', (worker, code, signal) => {
    const started = listening.delete(worker);
    if (stopping) return;
    if (!started) {
      // A worker that cannot start (port taken, store unreachable) would fail again: give up.
      logger.error({ pid: worker.process.pid, code, signal }, 'a TPS worker failed to start; stopping');
      void stop(1);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'a TPS worker died; starting another');
    fork();
  });

  const stop = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            w.process.kill('SIGTERM');
          }),
      ),
    );
    // Only once every worker has drained its commits through it.
    await writerDb?.close().catch(() => undefined);
    process.exit(exitCode);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(0));
  process.on('SIGHUP', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGHUP');
  });

  for (let i = 0; i < settings.workers; i++) fork();
}

/** True in the primary of a multi-worker start; workers and single-process starts run the service. */
export const isClusterPrimary = (settings: Settings): boolean => settings.workers > 1 && cluster.isPrimary;

/** True in a worker forked by `runPrimary`: the primary has already migrated and bootstrapped. */
export const isClusterWorker = (): boolean => cluster.isWorker && process.env.TPS_CLUSTER_WORKER === '1';
