import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { createAdvisor } from './ai/advisor.js';
import { registerAiMetrics } from './ai/metrics.js';
import { advisoryPort } from './ai/port.js';
import { bootstrapKeys } from './auth/bootstrap.js';
import type { KeyPair } from './auth/keys.js';
import { KeyRing } from './auth/keyring.js';
import type { Settings } from './config/env.js';
import type { AdvisoryPort } from './evaluate/advisory.js';
import { Evaluator } from './evaluate/evaluator.js';
import { EventHub } from './events/hub.js';
import { Ingestor } from './events/ingest.js';
import { RetentionPruner } from './events/retention.js';
import { createLogger, type Logger } from './http/logger.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { authenticate, errors, rateLimit, requestId, requireJson, type TpsState } from './http/middleware.js';
import { evaluateRoutes } from './http/routes/evaluate.js';
import { eventRoutes } from './http/routes/events.js';
import { serviceRoutes } from './http/routes/service.js';
import { loadCatalog } from './policy/catalog.js';
import { ConfigHolder } from './policy/holder.js';
import { watchConfig, type ReloadOutcome } from './policy/watch.js';
import { GroupCommitter } from './record/groupCommit.js';
import { openDatabase, type Database } from './store/db.js';
import { KnexEventStore, type EventRecord } from './store/eventStore.js';
import { KnexKeyStore } from './store/keyStore.js';
import { PolicyVersionStore } from './store/policyVersionStore.js';
import { MemoryChallengeStore, type ChallengeStore } from './state/challenges.js';
import { MemoryVelocityCounter, type VelocityCounter } from './state/counters.js';
import { connectRedis, RedisChallengeStore, RedisVelocityCounter } from './state/redis.js';

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
  evaluator: Evaluator;
  metrics: Metrics;
  /** Decision Logs and Event Stream (docs/events.md). */
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
  advisor?: AdvisoryPort;
  /** Key prefix for Redis state, so several instances or test runs can share one Redis. */
  redisPrefix?: string;
  /** False when another process has already migrated the store (cluster workers: src/cluster.ts). */
  migrate?: boolean;
}

/** Builds the whole service from settings: store, configuration, state, evaluator and HTTP app. */
export async function createTps(settings: Settings, options: TpsOptions = {}): Promise<Tps> {
  const logger = options.logger ?? createLogger(settings.logLevel);
  const catalog = loadCatalog(settings.configDir);
  const metrics = createMetrics();
  const db = await openDatabase(settings.databaseUrl, {
    migrate: options.migrate,
    sqliteSync: settings.sqliteSync,
    onCheckpoint: (seconds) => metrics.checkpointSeconds.observe(seconds),
  });
  const closers: (() => Promise<void>)[] = [];
  try {
    const keyStore = new KnexKeyStore(db.knex);
    const firstKeys = await bootstrapKeys(keyStore, settings);
    const policyVersions = new PolicyVersionStore(db.knex);
    await policyVersions.remember(catalog.policies.values());
    const config = new ConfigHolder(catalog);
    config.onSwap((next) => policyVersions.remember(next.policies.values()));
    const configWatcher = watchConfig(config, { dir: settings.configDir, logger, watch: settings.watchConfig, debounceMs: settings.watchDebounceMs });
    closers.push(async () => configWatcher.close());

    let counters: VelocityCounter;
    let challenges: ChallengeStore;
    if (settings.redisUrl) {
      const redis = connectRedis(settings.redisUrl);
      closers.push(async () => void redis.disconnect());
      counters = new RedisVelocityCounter(redis, options.redisPrefix);
      challenges = new RedisChallengeStore(redis, options.redisPrefix);
    } else {
      counters = new MemoryVelocityCounter();
      challenges = new MemoryChallengeStore();
    }

    const events = new KnexEventStore(db);
    const hub = new EventHub(events, { pollMs: settings.events.streamPollMs, batch: 500, logger });
    const ingestor = new Ingestor(events, { maxBatch: settings.commitMaxBatch, maxDelayMs: settings.commitMaxDelayMs, onCommit: () => hub.notify() });
    const retention = new RetentionPruner(events, { days: settings.events.retentionDays, intervalMs: 60_000, batch: 1000, pauseMs: 50, logger });
    const committer = new GroupCommitter<EventRecord>(
      async (batch) => {
        const endTimer = metrics.commitSeconds.startTimer();
        try {
          await events.insertBatch(batch);
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
    );
    const evaluator = new Evaluator({
      catalog: config.current,
      counters,
      challenges,
      record: (event) => committer.append(event),
      advisor:
        options.advisor ??
        advisoryPort(createAdvisor({ ...settings.ai, metrics: registerAiMetrics(metrics.registry), logger })),
      challengeTtlMs: settings.challengeTtlSeconds * 1000,
    });
    const keys = new KeyRing(keyStore, settings.keyCacheMs);

    const app = new Koa<TpsState>({ proxy: false });
    app.silent = true;
    const guard = [authenticate(keys), rateLimit(counters, settings.keyRateLimitPerMinute)];
    const json = [requireJson(), bodyParser({ enableTypes: ['json'], jsonLimit: String(settings.maxBodyBytes), strict: true }) as never];
    app.use(requestId());
    app.use(metrics.observe());
    app.use(errors(logger));
    const eventsRouter = eventRoutes(guard, json, {
      store: events,
      ingestor,
      hub,
      policyVersions,
      stream: { maxQueue: settings.events.streamMaxQueue, pageSize: 200, heartbeatMs: settings.events.streamHeartbeatMs, stallMs: 60_000, retryMs: 2000 },
    });
    for (const router of [evaluateRoutes([...guard, ...json], evaluator, metrics), serviceRoutes(db, { catalog: config.current, configProblems: config.lastProblems }, metrics), eventsRouter]) {
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
      evaluator,
      metrics,
      ingestor,
      hub,
      retention,
      firstKeys,
      reloadConfig: (trigger = 'manual') => configWatcher.reload(trigger),
      async listen(port = settings.port, host = settings.host) {
        const server = http.createServer(app.callback());
        server.keepAliveTimeout = 65_000;
        servers.push(server);
        await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, resolve));
        const { port: bound } = server.address() as AddressInfo;
        return { server, url: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${bound}` };
      },
      async close() {
        // Streams never end on their own: end them first, or the servers would wait for them.
        await hub.close();
        await retention.stop();
        await Promise.all(servers.map((s) => new Promise<void>((resolve) => { s.close(() => resolve()); s.closeIdleConnections(); })));
        await committer.drain();
        await ingestor.drain();
        await counters.close();
        await challenges.close();
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
