import Router from '@koa/router';
import { Registry } from 'prom-client';
import type { Catalog } from '../../policy/catalog.js';
import type { StateHealth } from '../../state/open.js';
import type { Database } from '../../store/db.js';
import type { MetricsText } from '../metrics.js';
import type { TpsState } from '../middleware.js';
import { openApiDocument } from '../openapi.js';

export interface ReadinessSource {
  catalog(): Catalog;
  /** Problems of the last configuration reload that was refused, if any. */
  configProblems(): readonly { file: string; path: string; message: string }[];
  /** Seconds until a held-back evaluation thread starts again (0: evaluate can answer); absent without a thread. */
  evaluationHeldBack?(): number;
  /** Whether the shared state answers (Redis: a PING bounded by TPS_REDIS_TIMEOUT_MS; in this process: always). */
  sharedState(): Promise<StateHealth>;
}

/** The error of a 503 from /readyz: what keeps the service from being ready. Its code is this route's own, not an API call's. */
function notReady(storeDown: boolean, heldBackSeconds: number): { code: 'not_ready'; message: string } {
  const why = [
    ...(storeDown ? ['the store is unreachable'] : []),
    ...(heldBackSeconds ? [`the evaluation thread is held back; it starts again in ${heldBackSeconds} s`] : []),
  ];
  return { code: 'not_ready', message: `not ready: ${why.join('; ')}` };
}

/** Liveness, readiness, metrics and the API description: no key needed. */
export function serviceRoutes(db: Database, config: ReadinessSource, metricsText: MetricsText): Router<TpsState> {
  const router = new Router<TpsState>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const catalog = config.catalog();
    // Both at once: a silent Redis costs its timeout, not that on top of the store's answer.
    const [store, state] = await Promise.all([
      db.knex.raw('select 1').then(
        () => 'ok',
        () => 'unreachable',
      ),
      config.sharedState(),
    ]);
    const problems = config.configProblems();
    const heldBack = config.evaluationHeldBack?.() ?? 0;
    // The shared state is reported, not made a condition: Redis is shared by every instance, so its
    // outage would take them all out of rotation at once, while calls that use no Redis-backed state
    // still answer and the others answer a fast 503 state_unavailable with retry-after.
    const ready = store === 'ok' && heldBack === 0;
    ctx.status = ready ? 200 : 503;
    if (heldBack) ctx.set('retry-after', String(heldBack));
    ctx.body = {
      // A 503 is an error answer like any other (CONTRACT "Errors"), with the readiness fields beside it.
      ...(ready ? {} : { error: notReady(store !== 'ok', heldBack) }),
      status: ready ? 'ready' : 'not_ready',
      store: { status: store, dialect: db.dialect },
      state: { status: state.status, backend: state.backend },
      evaluation: heldBack ? { status: 'restarting', retryAfterSeconds: heldBack } : { status: 'ok' },
      configuration: {
        versionId: catalog.versionId,
        loadedAt: catalog.loadedAt.toISOString(),
        operations: catalog.operations.size,
        lastReload: problems.length ? { status: 'rejected', problems } : { status: 'ok' },
      },
      policies: [...catalog.policies.values()].map((p) => ({ id: p.id, versionId: p.versionId })),
    };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = Registry.PROMETHEUS_CONTENT_TYPE;
    ctx.body = await metricsText();
  });
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument;
  });
  return router;
}
