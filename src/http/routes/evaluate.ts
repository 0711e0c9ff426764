import Router from '@koa/router';
import coBody from 'co-body';
import type { EvaluationRunner } from '../../evaluate/runner.js';
import type { Metrics } from '../metrics.js';
import type { Middleware, TpsState } from '../middleware.js';

/**
 * POST /api/evaluate: the body's text goes to the runner (parse → validate → facts, risk, policy,
 * decide), whose event is committed before the answer. The text is read here, with the size limit
 * and content-encoding handling of koa-bodyparser, and parsed where it is evaluated.
 */
export function evaluateRoutes(guard: Middleware[], runner: EvaluationRunner, metrics: Metrics, maxBodyBytes: number): Router<TpsState> {
  const router = new Router<TpsState>();
  router.post('/api/evaluate', ...guard, async (ctx) => {
    const text = await coBody.text(ctx, { limit: maxBodyBytes, encoding: 'utf8' });
    const answer = await runner.evaluate(ctx.state.principal.environment, text);
    metrics.decisions.inc({ operation: answer.operationKey, decision: answer.decision });
    ctx.type = 'application/json';
    ctx.body = answer.json;
  });
  return router;
}
