import Router from '@koa/router';
import type { EvaluationRunner, EvaluationTiming } from '../../evaluate/runner.js';
import { CHECKPOINT_KINDS, type CheckpointLog } from '../../store/checkpointLog.js';
import { readBodyText } from '../body.js';
import type { Metrics } from '../metrics.js';
import type { Middleware, TpsState } from '../middleware.js';

/**
 * Server-Timing (W3C) for one answer, in milliseconds from the handler's start (the key checked):
 * `evaluate` to the evaluation's answer (reading the body, and the evaluation thread's round trip
 * when there is one), `commit` the wait for the group commit after it, `total` both. With SQLite
 * in a file, `bulk`, `filesync` and `catchup`: how much of the commit's wait each part of the
 * checkpointer's work was running (checkpointer.ts), not an addend of `total`.
 */
function serverTiming(start: number, evaluated: number, end: number, checkpoints: CheckpointLog | undefined): string {
  const ms = (d: number) => d.toFixed(3);
  const during = checkpoints ? CHECKPOINT_KINDS.map((kind) => `, ${kind};dur=${ms(checkpoints.overlap(kind, evaluated, end))}`).join('') : '';
  return `evaluate;dur=${ms(evaluated - start)}, commit;dur=${ms(end - evaluated)}, total;dur=${ms(end - start)}${during}`;
}

/**
 * POST /api/evaluate: the body's text goes to the runner (parse → validate → facts, risk, policy,
 * decide), whose event is committed before the answer. The text is read here (readBodyText: the
 * size limit, the content-encoding, strict UTF-8), and parsed where it is evaluated.
 */
export function evaluateRoutes(guard: Middleware[], runner: EvaluationRunner, metrics: Metrics, options: { maxBodyBytes: number; serverTiming: boolean; checkpoints?: CheckpointLog }): Router<TpsState> {
  const router = new Router<TpsState>();
  router.post('/api/evaluate', ...guard, async (ctx) => {
    const start = options.serverTiming ? performance.now() : 0;
    const timing: EvaluationTiming | undefined = options.serverTiming ? {} : undefined;
    const text = await readBodyText(ctx, options.maxBodyBytes);
    const answer = await runner.evaluate(ctx.state.principal.environment, text, timing);
    metrics.decisions.inc({ operation: answer.operationKey, decision: answer.decision });
    if (timing) ctx.set('server-timing', serverTiming(start, timing.evaluated!, performance.now(), options.checkpoints));
    ctx.type = 'application/json';
    ctx.body = answer.json;
  });
  return router;
}
