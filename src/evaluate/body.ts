import bourne from '@hapi/bourne';
import { ApiError, invalidJson } from '../api/errors.js';
import type { EvaluateRequest } from '../api/types.js';
import { validateEvaluateRequest } from '../validate/evaluateRequest.js';
import type { Evaluation, Evaluator } from './evaluator.js';

// koa-bodyparser's strict JSON: an object or an array, an empty body read as {}.
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*[[{]/;

/** The body as koa-bodyparser reads JSON (co-body, strict, `__proto__` refused), or invalid_json. */
export function parseJsonBody(text: string): unknown {
  if (!text) return {};
  try {
    if (!STRICT_JSON.test(text)) throw new SyntaxError('not an object or an array');
    return bourne.parse(text, { protoAction: 'error' });
  } catch {
    throw invalidJson();
  }
}

/** The evaluate route's work from the body's text on, in whichever thread evaluates: parse → validate → evaluate. */
export function evaluateBody(evaluator: Evaluator, environment: string, text: string): Promise<Evaluation> {
  const checked = validateEvaluateRequest(parseJsonBody(text));
  if (!checked.ok) throw new ApiError('invalid_request', 'the evaluate request is invalid', checked.details);
  return evaluator.evaluate(environment, checked.value as EvaluateRequest);
}
