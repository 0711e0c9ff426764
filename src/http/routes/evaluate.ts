import Router from '@koa/router';
import { ApiError } from '../../api/errors.js';
import type { Evaluator } from '../../evaluate/evaluator.js';
import { validateEvaluateRequest } from '../../validate/evaluateRequest.js';
import type { Metrics } from '../metrics.js';
import type { Middleware, TpsState } from '../middleware.js';

/** POST /api/evaluate: validate → evaluate (facts, risk, policy, decide, record) → respond. */
export function evaluateRoutes(guard: Middleware[], evaluator: Evaluator, metrics: Metrics): Router<TpsState> {
  const router = new Router<TpsState>();
  router.post('/api/evaluate', ...guard, async (ctx) => {
    const checked = validateEvaluateRequest(ctx.request.body);
    if (!checked.ok) throw new ApiError('invalid_request', 'the evaluate request is invalid', checked.details);
    const { response } = await evaluator.evaluate(ctx.state.principal.environment, checked.value);
    metrics.decisions.inc({ operation: response.operationKey, decision: response.decision });
    ctx.body = response;
  });
  return router;
}
