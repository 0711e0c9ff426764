import { ApiError } from '../api/errors.js';
import type { EvaluateRequest } from '../api/types.js';
import { validateEvaluateRequest } from '../validate/evaluateRequest.js';
import { parseJsonBody } from '../validate/json.js';
import type { Evaluation, Evaluator } from './evaluator.js';

/** The evaluate route's work from the body's text on, in whichever thread evaluates: parse → validate → evaluate. */
export function evaluateBody(evaluator: Evaluator, environment: string, text: string): Promise<Evaluation> {
  const checked = validateEvaluateRequest(parseJsonBody(text));
  if (!checked.ok) throw new ApiError('invalid_request', 'the evaluate request is invalid', checked.details);
  return evaluator.evaluate(environment, checked.value as EvaluateRequest);
}
