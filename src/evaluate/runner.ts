import type { EvaluateResponse } from '../api/types.js';
import type { PreparedEvent } from '../store/eventWrites.js';
import { evaluateBody } from './body.js';
import { storeUnavailable, type Evaluator } from './evaluator.js';
import type { EvaluationThread } from './thread.js';

/**
 * Where POST /api/evaluate's body goes: the evaluation thread (the default) or an Evaluator in this
 * thread (TPS_EVALUATE_THREAD=false). Either answers only once the event is committed.
 */
export interface EvaluationRunner {
  evaluate(environment: string, text: string): Promise<EvaluateResponse>;
}

export const threadRunner = (thread: EvaluationThread, commit: (event: PreparedEvent) => Promise<void>): EvaluationRunner => ({
  async evaluate(environment, text) {
    const { response, event } = await thread.evaluate(environment, text);
    await commit(event).catch(storeUnavailable);
    return response;
  },
});

/** The evaluator's own `record` commits. */
export const localRunner = (evaluator: Evaluator): EvaluationRunner => ({
  evaluate: async (environment, text) => (await evaluateBody(evaluator, environment, text)).response,
});
