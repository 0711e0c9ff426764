import Router from '@koa/router';
import coBody from 'co-body';
import type { EvaluationRunner, EvaluationTiming } from '../../evaluate/runner.js';
import type { Metrics } from '../metrics.js';
import type { Middleware, TpsState } from '../middleware.js';

/**
 * Server-Timing (W3C) for one answer, in milliseconds from the handler's start (the key checked):
 * `evaluate` to the evaluation's answer (reading the body, and the evaluation thread's round trip
 * when there is one), `commit` the wait for the group commit after it, `total` both.
 */
function serverTiming(start: number, evaluated: number, end: number): string {
  const ms = (d: number) => d.toFixed(3);
  return `evaluate;dur=${ms(evaluated - start)}, commit;dur=${ms(end - evaluated)}, total;dur=${ms(end - start)}`;
}

/**
 * POST /api/evaluate: the body's text goes to the runner (parse → validate → facts, risk, policy,
 * decide), whose event is committed before the answer. The text is read here, with the size limit
 * and content-encoding handling of koa-bodyparser, and parsed where it is evaluated.
 */
export function evaluateRoutes(guard: Middleware[], runner: EvaluationRunner, metrics: Metrics, options: { maxBodyBytes: number; serverTiming: boolean }): Router<TpsState> {
  const router = new Router<TpsState>();
  router.post('/api/evaluate', ...guard, async (ctx) => {
    const start = options.serverTiming ? performance.now() : 0;
    const timing: EvaluationTiming | undefined = options.serverTiming ? {} : undefined;
    const text = await coBody.text(ctx, { limit: options.maxBodyBytes, encoding: 'utf8' });
    const answer = await runner.evaluate(ctx.state.principal.environment, text, timing);
    metrics.decisions.inc({ operation: answer.operationKey, decision: answer.decision });
    if (timing) ctx.set('server-timing', serverTiming(start, timing.evaluated!, performance.now()));
    ctx.type = 'application/json';
    ctx.body = answer.json;
  });
  return router;
}
