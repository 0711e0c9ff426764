import v8 from 'node:v8';
import { createTps, type Tps, type TpsOptions } from './app.js';
import { configFromPrimary, reportReloads } from './cluster/configRelay.js';
import { committedByPrimary } from './cluster/eventCommits.js';
import { metricsThroughPrimary } from './cluster/metrics.js';
import { isClusterPrimary, isClusterWorker, runPrimary } from './cluster/primary.js';
import { readSettings, type Settings } from './config/env.js';
import { createLogger, type Logger } from './http/logger.js';
import { ConfigError } from './policy/problems.js';

const HEAP_GROWING_PERCENT = 100;

/** `npm start`: one TPS process on PORT (or TPS_WORKERS of them), with the store and configuration of the environment. */
async function main(): Promise<void> {
  const reloads = catchReloads();
  // Left to V8, a heap's old generation may grow to four times what survived its last full
  // collection before the next one: under load the HTTP thread's swung between ~20 and ~80 MB,
  // and the process's RSS between 135 and 207 MB through a million evaluations. Held to twice, RSS
  // stayed within 156–176 MB, throughput and the 50% tail as they were (bench/ROUNDS.md,
  // twenty-seventh round). Read at every collection, so it holds for every thread from its next.
  v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  const settings = readSettings();
  const logger = createLogger(settings.logLevel);
  // TPS_WORKERS > 1: this process prepares the store once and supervises the workers (src/cluster/primary.ts).
  if (isClusterPrimary(settings)) {
    // It catches SIGHUP itself, from its first line: this handler goes only once that one is in.
    const primary = runPrimary(settings, logger, async () => {
      const tps = await boot(settings, logger);
      await tps.close();
      return tps.config.current();
    });
    reloads.release();
    return primary;
  }
  // A worker's SQLite events are committed by the primary, the file's one writer, its /metrics are
  // the whole service's, gathered by the primary, and its configuration the one the others serve.
  const worker = isClusterWorker();
  const tps = await boot(settings, logger, worker ? { migrate: false, eventCommits: committedByPrimary, metricsText: metricsThroughPrimary, configSource: await configFromPrimary() } : {});
  const reload = () => tps.reloadConfig('SIGHUP');
  reloads.ready(worker ? reportReloads(tps.config, reload) : reload);
  const { url } = await tps.listen();
  logger.info({ url, store: tps.db.describe, configVersion: tps.config.current().versionId, evaluationThread: Boolean(tps.evaluationThread), cpus: tps.cpus }, 'TPS listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    reloads.stop(() => logger.info({ signal: 'SIGHUP' }, 'reload ignored: TPS is stopping'));
    logger.info({ signal }, 'TPS stopping');
    await tps.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/**
 * SIGHUP, a hot reload on demand (the watcher logs its outcome), whose default action would end a
 * process still starting: caught from main()'s first line. One that comes before the service is
 * built is applied once it is, not dropped: start-up reads the files before it opens and migrates
 * the store, which may take long, so the signal may follow an edit that start-up did not see.
 * Several before then make one reload. Once the service stops, one is ignored: it would read the
 * files and write to the store being closed; it stays caught, as its default action would end the
 * process mid-close.
 */
function catchReloads(): { ready(reload: () => Promise<unknown>): void; release(): void; stop(ignored: () => void): void } {
  let reload: (() => Promise<unknown>) | undefined;
  let owed = false;
  let ignored: (() => void) | undefined;
  const onSignal = () => {
    if (ignored) ignored();
    else if (reload) void reload();
    else owed = true;
  };
  process.on('SIGHUP', onSignal);
  return {
    ready(r) {
      reload = r;
      if (owed) void r();
    },
    release: () => void process.off('SIGHUP', onSignal),
    stop: (onIgnored) => void (ignored = onIgnored),
  };
}

/** Builds the service (migrating unless told not to) and prints the first start's keys once. */
async function boot(settings: Settings, logger: Logger, options: TpsOptions = {}): Promise<Tps> {
  let tps;
  try {
    tps = await createTps(settings, { logger, ...options });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`TPS did not start: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (tps.firstKeys) {
    // Printed once, to the terminal rather than the log: the log never holds a secret.
    process.stdout.write(
      [
        '',
        `TPS created the environment "${tps.firstKeys.environment}" and its keys. They are shown only now; store them safely.`,
        `  secret key (server side only): ${tps.firstKeys.secretKey}`,
        `  publishable key (browser):     ${tps.firstKeys.publishableKey}`,
        '',
        '',
      ].join('\n'),
    );
  }
  return tps;
}

main().catch((err) => {
  process.stderr.write(`TPS failed to start: ${(err as Error).message}\n`);
  process.exit(1);
});
