import type { Decision, EvaluateResponse } from '../api/types.js';
import type { PreparedEvent } from '../store/eventWrites.js';
import { evaluateBody } from './body.js';
import { storeUnavailable, type Evaluator } from './evaluator.js';
import type { EvaluationThread } from './thread.js';

/** An evaluation's answer as it is sent: its JSON text, and what the metrics count it by. */
export interface Answer {
  json: string;
  operationKey: string;
  decision: Decision;
}

// Made where the evaluation ran: from the thread the answer crosses as one string, not as an
// object the HTTP thread would copy and then serialize again.
export const answerOf = (response: EvaluateResponse): Answer => ({ json: JSON.stringify(response), operationKey: response.operationKey, decision: response.decision });

/**
 * Where POST /api/evaluate's body goes: the evaluation thread (the default) or an Evaluator in this
 * thread (TPS_EVALUATE_THREAD=false). Either answers only once the event is committed.
 */
export interface EvaluationRunner {
  evaluate(environment: string, text: string): Promise<Answer>;
}

export const threadRunner = (thread: EvaluationThread, commit: (event: PreparedEvent) => Promise<void>): EvaluationRunner => ({
  async evaluate(environment, text) {
    const { answer, event } = await thread.evaluate(environment, text);
    await commit(event).catch(storeUnavailable);
    return answer;
  },
});

/** The evaluator's own `record` commits. */
export const localRunner = (evaluator: Evaluator): EvaluationRunner => ({
  evaluate: async (environment, text) => answerOf((await evaluateBody(evaluator, environment, text)).response),
});
