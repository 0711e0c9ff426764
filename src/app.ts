import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import type { Registry } from 'prom-client';
import { createAdvisor } from './ai/advisor.js';
import { registerAiMetrics } from './ai/metrics.js';
import { advisoryPort } from './ai/port.js';
import { bootstrapKeys } from './auth/bootstrap.js';
import type { KeyPair } from './auth/keys.js';
import { KeyRing } from './auth/keyring.js';
import { usableCpus } from './config/cpus.js';
import { localUrl, type Settings } from './config/env.js';
import type { AdvisoryPort } from './evaluate/advisory.js';
import { Evaluator } from './evaluate/evaluator.js';
import { landedIn } from './evaluate/landed.js';
import { localRunner, threadRunner, type EvaluationRunner } from './evaluate/runner.js';
import { evaluatesInThread } from './evaluate/placement.js';
import { EvaluationThread } from './evaluate/thread.js';
import { CURSOR_SECRET, CursorCodec } from './events/cursor.js';
import { EventHub } from './events/hub.js';
import { Ingestor } from './events/ingest.js';
import { RetentionPruner } from './events/retention.js';
import { jsonBody } from './http/body.js';
import { createLogger, safeError, type Logger } from './http/logger.js';
import { createMetrics, registerThreadGc, type Metrics, type MetricsText } from './http/metrics.js';
import { answerClientError, authenticate, errors, rateLimit, requestId, requireJson, type TpsState } from './http/middleware.js';
import { evaluateRoutes } from './http/routes/evaluate.js';
import { eventRoutes } from './http/routes/events.js';
import { serviceRoutes } from './http/routes/service.js';
import { compiledCatalog, loadCatalog } from './policy/catalog.js';
import { ConfigHolder } from './policy/holder.js';
import type { LoadedConfig } from './policy/load.js';
import { watchConfig, type ReloadOutcome } from './policy/watch.js';
import { GroupCommitter } from './record/groupCommit.js';
import { openDatabase, type Database } from './store/db.js';
import { KnexEventStore, type PreparedEvent } from './store/eventStore.js';
import type { EventWriter } from './store/eventWriteTx.js';
import { KnexKeyStore } from './store/keyStore.js';
import { PolicyVersionStore } from './store/policyVersionStore.js';
import { serviceSecret } from './store/serviceSecrets.js';
import { openState } from './state/open.js';

export interface Tps {
  app: Koa<TpsState>;
  settings: Settings;
  logger: Logger;
  db: Database;
  config: ConfigHolder;
  keys: KeyRing;
  keyStore: KnexKeyStore;
  events: KnexEventStore;
  policyVersions: PolicyVersionStore;
  /** Where POST /api/evaluate goes. */
  evaluations: EvaluationRunner;
  /** The Evaluator in this thread, when evaluations run here (TPS_EVALUATE_THREAD=false, or an injected advisor). */
  evaluator?: Evaluator;
  /** The evaluation thread, when evaluations run there (TPS_EVALUATE_THREAD: with SQLite by default). */
  evaluationThread?: EvaluationThread;
  /** The CPUs TPS_EVALUATE_THREAD=auto counted (config/cpus.ts). */
  cpus: number;
  metrics: Metrics;
  /** Decision Logs and Event Stream (the README section of that name). */
  ingestor: Ingestor;
  hub: EventHub;
  retention: RetentionPruner;
  /** Set when this start created the first key pair (CONTRACT: printed once). */
  firstKeys?: KeyPair;
  /** Hot reload (SIGHUP, tests); the file watcher calls it too unless TPS_WATCH_CONFIG=false. */
  reloadConfig(trigger?: string): Promise<ReloadOutcome>;
  listen(port?: number, host?: string): Promise<{ server: http.Server; url: string }>;
  close(): Promise<void>;
}

export interface TpsOptions {
  logger?: Logger;
  /** An advisory stage of the caller's (tests): a function, so evaluations then run in this thread. */
  advisor?: AdvisoryPort;
  /** False when another process has already migrated the store (cluster workers: src/cluster/primary.ts). */
  migrate?: boolean;
  /** SQLite shared with other processes (cluster workers): where the events' commits go instead of this process's writer (src/cluster/eventCommits.ts). */
  eventCommits?: (local: EventWriter) => EventWriter;
  /** Cluster workers: what `/metrics` answers, given this process's registry (src/cluster/metrics.ts). */
  metricsText?: (local: Registry) => MetricsText;
  /** Cluster workers: the configuration to start from, the one the others serve, instead of the files (src/cluster/configRelay.ts). */
  configSource?: LoadedConfig;
}

/** Builds the whole service from settings: store, configuration, state, evaluator and HTTP app. */
export async function createTps(settings: Settings, options: TpsOptions = {}): Promise<Tps> {
  const logger = options.logger ?? createLogger(settings.logLevel);
  const catalog = options.configSource ? compiledCatalog(options.configSource) : loadCatalog(settings.configDir);
  const metrics = createMetrics();
  const db = await openDatabase(settings.databaseUrl, {
    migrate: options.migrate,
    sqliteSync: settings.sqliteSync,
    sqliteWalMb: settings.sqliteWalMb,
    sqlitePageSize: settings.sqlitePageSize,
    // The primary, the file's one writer, checkpoints it (src/cluster/primary.ts).
    checkpoint: !options.eventCommits,
    onCheckpoint: (seconds) => metrics.checkpointSeconds.observe(seconds),
  });
  // Said once, by the process that prepared the store (not again by each cluster worker).
  if (db.pageSize && db.pageSize !== settings.sqlitePageSize && options.migrate !== false) {
    logger.warn({ pageSize: db.pageSize, requested: settings.sqlitePageSize }, 'the SQLite file keeps the page size it was made with; TPS_SQLITE_PAGE_SIZE applies to new files');
  }
  const closers: (() => Promise<void>)[] = [];
  try {
    const keyStore = new KnexKeyStore(db.knex, db.reader);
    const firstKeys = await bootstrapKeys(keyStore, settings);
    const policyVersions = new PolicyVersionStore(db.knex);
    await policyVersions.remember(catalog.policies.values());
    const config = new ConfigHolder(catalog);
    config.onSwap((next) => policyVersions.remember(next.policies.values()));
    const configWatcher = watchConfig(config, { dir: settings.configDir, logger, watch: settings.watchConfig, debounceMs: settings.watchDebounceMs, settleMs: settings.watchSettleMs });
    closers.push(async () => configWatcher.close());

    // This thread's state: the API quota, and evaluations when they run here.
    const state = openState(settings.redisUrl, settings.redisPrefix, { timeoutMs: settings.redisTimeoutMs, logger });
    closers.push(() => state.close());

    const commits = db.dialect === 'sqlite' ? options.eventCommits : undefined;
    const events = new KnexEventStore(db, { commits, logger });
    metrics.eventWriter.set({ writer: commits ? 'primary' : 'self' }, 1);
    const hub = new EventHub(events, { pollMs: settings.events.streamPollMs, batch: 500, logger });
    const ingestor = new Ingestor(events, { maxBatch: settings.commitMaxBatch, maxDelayMs: settings.commitMaxDelayMs, onCommit: () => hub.notify() });
    const retention = new RetentionPruner(events, { days: settings.events.retentionDays, intervalMs: 60_000, batch: 1000, pauseMs: 50, logger });
    const committer = new GroupCommitter<PreparedEvent>(
      async (batch) => {
        const endTimer = metrics.commitSeconds.startTimer();
        try {
          await events.insertPrepared(batch);
          endTimer();
          metrics.commitBatch.observe(batch.length);
          hub.notify();
        } catch (err) {
          metrics.commitFailures.inc();
          throw err;
        }
      },
      settings.commitMaxBatch,
      settings.commitMaxDelayMs,
      settings.commitWaitMs,
    );
    // Built only where it is used: an injected advisory port replaces it (and its metrics) entirely.
    const newAdvisor = () => createAdvisor({ ...settings.ai, metrics: registerAiMetrics(metrics.registry), logger });
    const challengeTtlMs = settings.challengeTtlSeconds * 1000;
    let evaluator: Evaluator | undefined;
    let evaluationThread: EvaluationThread | undefined;
    let evaluations: EvaluationRunner;
    const cpus = usableCpus();
    const threaded = evaluatesInThread(settings.evaluateThread, { dialect: db.dialect, cpus, workers: settings.workers });
    if (threaded && !options.advisor) {
      const source = config.current().source;
      const thread = new EvaluationThread(
        { source, redisUrl: settings.redisUrl, redisPrefix: settings.redisPrefix, redisTimeoutMs: settings.redisTimeoutMs, logLevel: settings.logLevel, challengeTtlMs },
        newAdvisor(),
        (err) => {
          metrics.threadFailures.inc();
          logger.error({ err: safeError(err) }, 'the evaluation thread failed; starting it again');
        },
        (count) => metrics.threadReplies.observe(count),
      );
      // Before the swap: the thread has the new version by the time an answer can name it.
      config.onSwap((next) => thread.setCatalog(next.source));
      closers.unshift(() => thread.close());
      await thread.ready;
      registerThreadGc(metrics.registry, () => thread.gcSince());
      evaluations = threadRunner(thread, committer, landedIn(events));
      evaluationThread = thread;
    } else {
      evaluator = new Evaluator({
        catalog: config.current,
        counters: state.counters,
        challenges: state.challenges,
        advisor: options.advisor ?? advisoryPort(newAdvisor()),
        challengeTtlMs,
      });
      evaluations = localRunner(evaluator, committer, landedIn(events));
    }
    metrics.evaluatesInThread.set(evaluationThread ? 1 : 0);
    const keys = new KeyRing(keyStore, settings.keyCacheMs);

    const app = new Koa<TpsState>({ proxy: false });
    app.silent = true;
    // Once close() began, every answer closes its connection: a keep-alive client that keeps
    // sending would otherwise hold server.close(), and SIGTERM's exit, open for ever.
    let closing = false;
    app.use(async (ctx, next) => {
      await next();
      if (closing) ctx.set('connection', 'close');
    });
    const guard = [authenticate(keys), rateLimit(state.counters, settings.keyRateLimitPerMinute)];
    const json = [requireJson(), jsonBody(settings.maxBodyBytes)];
    app.use(requestId());
    app.use(metrics.observe());
    app.use(errors(logger));
    const eventsRouter = eventRoutes(guard, json, {
      store: events,
      ingestor,
      hub,
      policyVersions,
      stream: { maxQueue: settings.events.streamMaxQueue, pageSize: 200, heartbeatMs: settings.events.streamHeartbeatMs, stallMs: 60_000, retryMs: 2000 },
      keys,
      // The store's, so every process on it issues and accepts the same cursors, across restarts.
      cursors: new CursorCodec(await serviceSecret(db.knex, CURSOR_SECRET)),
    });
    // A cluster worker's are the whole service's (src/cluster/metrics.ts).
    const metricsText = options.metricsText?.(metrics.registry) ?? (() => metrics.registry.metrics());
    for (const router of [evaluateRoutes([...guard, requireJson()], evaluations, metrics, { maxBodyBytes: settings.maxBodyBytes, serverTiming: settings.serverTiming, checkpoints: db.checkpoints }), serviceRoutes(db, { catalog: config.current, configProblems: config.lastProblems, evaluationHeldBack: evaluationThread?.heldBackSeconds, sharedState: state.health }, metricsText), eventsRouter]) {
      app.use(router.routes());
    }

    retention.start();
    const servers: http.Server[] = [];
    return {
      app,
      settings,
      logger,
      db,
      config,
      keys,
      keyStore,
      events,
      policyVersions,
      evaluations,
      evaluator,
      evaluationThread,
      cpus,
      metrics,
      ingestor,
      hub,
      retention,
      firstKeys,
      reloadConfig: (trigger = 'manual') => configWatcher.reload(trigger),
      async listen(port = settings.port, host = settings.host) {
        const server = http.createServer(app.callback());
        // What Node's parser refuses never reaches Koa; it is answered in CONTRACT's JSON all the same.
        server.on('clientError', answerClientError);
        server.keepAliveTimeout = 65_000;
        servers.push(server);
        await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
        const { port: bound } = server.address() as AddressInfo;
        return { server, url: localUrl(host, bound) };
      },
      async close() {
        closing = true;
        // Streams never end on their own: end them first, or the servers would wait for them.
        await hub.close();
        await retention.stop();
        await Promise.all(
          servers.map(
            (s) =>
              new Promise<void>((resolve) => {
                // An answer already being written leaves its connection idle after closeIdleConnections
                // ran: it goes then, not keepAliveTimeout (65 s) later (read as each answer ends).
                s.keepAliveTimeout = 1;
                s.close(() => resolve());
                s.closeIdleConnections();
              }),
          ),
        );
        await committer.drain();
        await ingestor.drain();
        for (const close of closers) await close();
        await db.close();
      },
    };
  } catch (err) {
    for (const close of closers) await close().catch(() => undefined);
    await db.close();
    throw err;
  }
}
