import cluster, { type Worker } from 'node:cluster';
import { localUrl, type Settings } from '../config/env.js';
import type { Logger } from '../http/logger.js';
import { createMetrics } from '../http/metrics.js';
import type { Catalog } from '../policy/catalog.js';
import { isPostgresUrl, openDatabase } from '../store/db.js';
import { sqliteEventWriter } from '../store/eventWriteTx.js';
import { ConfigRelay } from './configRelay.js';
import { commitWorkersEvents } from './eventCommits.js';
import { aggregateWorkersMetrics } from './metrics.js';
import { RestartBackoff } from './restartBackoff.js';

/**
 * TPS_WORKERS > 1 (node:cluster). The primary prepares the store once (migrations, key bootstrap,
 * policy versions: `prepare`), then forks the workers; each builds its own service and listens on
 * the same port, and the primary hands connections out. The primary serves no request itself.
 * SIGTERM and SIGINT stop the workers gracefully (each drains its group commit first), SIGHUP is
 * passed on to the listening ones, and each worker starts from the configuration the others serve
 * (configRelay.ts). Only the first start is all or nothing: a worker that dies after it started is
 * replaced, and a replacement that fails to start is tried again later (restartBackoff.ts) while
 * the others serve. With SQLite the primary also commits the workers' events, as the file's one
 * writer (eventCommits.ts), and it gathers every worker's metrics for each worker's `/metrics`
 * (metrics.ts).
 */
export async function runPrimary(settings: Settings, logger: Logger, prepare: () => Promise<Catalog>): Promise<void> {
  // SIGHUP's default action ends the process: caught before the store is prepared, which may take long.
  const relay = new ConfigRelay(logger);
  const listening = new Set<Worker>();
  process.on('SIGHUP', () => relay.reload(listening));
  // Challenges and velocity counts must be seen by every worker, or a step-up retry that lands on
  // another worker than its challenge would fail: several workers share state through Redis.
  if (!settings.redisUrl) throw new Error(`TPS_WORKERS=${settings.workers} needs REDIS_URL: step-up challenges and velocity counts are shared between workers through Redis`);
  // A SIGHUP from here on may have come after the files were read: the first workers reload once they listen.
  const asOf = relay.asked;
  const prepared = await prepare();
  relay.begin(prepared.source, prepared.versionId, asOf);
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
  // Until every first worker has listened: one that fails then stops the service.
  let started = false;
  const backoff = new RestartBackoff();
  const retries = new Set<NodeJS.Timeout>();
  aggregateWorkersMetrics(metrics.registry, () => [...listening]);
  const fork = () => cluster.fork({ TPS_CLUSTER_WORKER: '1' });

  // The port the workers share, which PORT=0 leaves to the system (the same for every worker).
  cluster.on('listening', (worker, address) => {
    listening.add(worker);
    backoff.reset();
    relay.listening(worker);
    if (listening.size === settings.workers) {
      started = true;
      logger.info({ workers: settings.workers, url: localUrl(settings.host, address.port) }, 'TPS workers listening');
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    const served = listening.delete(worker);
    relay.exited(worker);
    if (stopping) return;
    if (served) {
      logger.error({ pid: worker.process.pid, code, signal }, 'a TPS worker died; starting another');
      fork();
    } else if (!started) {
      // The first start: a worker that cannot start (port taken, store unreachable) would fail again.
      logger.error({ pid: worker.process.pid, code, signal }, 'a TPS worker failed to start; stopping');
      void stop(1);
    } else {
      // A replacement: the others go on serving while it is tried again.
      const retryInMs = backoff.next();
      logger.error({ pid: worker.process.pid, code, signal, retryInMs }, 'a replacement TPS worker failed to start; trying again');
      const timer = setTimeout(() => {
        retries.delete(timer);
        fork();
      }, retryInMs);
      retries.add(timer);
    }
  });

  const stop = async (exitCode: number) => {
    if (stopping) return;
    stopping = true;
    for (const timer of retries) clearTimeout(timer);
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

  for (let i = 0; i < settings.workers; i++) fork();
}

/** True in the primary of a multi-worker start; workers and single-process starts run the service. */
export const isClusterPrimary = (settings: Settings): boolean => settings.workers > 1 && cluster.isPrimary;

/** True in a worker forked by `runPrimary`: the primary has already migrated and bootstrapped. */
export const isClusterWorker = (): boolean => cluster.isWorker && process.env.TPS_CLUSTER_WORKER === '1';
