// Maps a decision to what the HTTP layer must do. Only `allow` and a well-formed `allow_redacted`
// reach `continue`; everything else (including a decision this version does not know, or a
// step-up without a challenge) halts the request, so a new or malformed answer fails closed.

import type { Challenge, EvaluateRequest, Redaction } from '../api/types.js';
import type { Evaluation } from '../client/synthetic.js';
import { applyRedaction, type RedactOptions } from './redaction.js';

export interface Continue {
  action: 'continue';
  evaluation: Evaluation;
  transaction: EvaluateRequest;
  /** Present for allow_redacted: apply it before returning data (see `redact`). */
  redaction?: Redaction;
  /** Returns a copy of `data` with this decision's redaction applied (identity for allow). */
  redact<T>(data: T, options?: RedactOptions): T;
}

export interface HaltBody {
  error: { code: string; message: string };
  decision?: string;
  telemetryId?: string;
  challenge?: Challenge;
  retryAfterSeconds?: number;
}

export interface Halt {
  action: 'block' | 'throttle' | 'challenge';
  status: number;
  headers: Record<string, string>;
  body: HaltBody;
  evaluation?: Evaluation;
  transaction?: EvaluateRequest;
}

export type Outcome = Continue | Halt;

/** 428 Precondition Required: unlike 401 it does not trip SPAs' "signed out" handling. */
export const DEFAULT_STEP_UP_STATUS = 428;
/** Used when a throttle answer carries no retryAfterSeconds. */
export const DEFAULT_RETRY_AFTER_SECONDS = 60;

const NO_STORE = { 'cache-control': 'no-store' };

interface HaltExtra {
  headers?: Record<string, string>;
  body?: Omit<HaltBody, 'error'>;
  evaluation?: Evaluation;
  transaction?: EvaluateRequest;
}

export function halt(action: Halt['action'], status: number, code: string, message: string, extra: HaltExtra = {}): Halt {
  return { action, status, headers: { ...NO_STORE, ...extra.headers }, body: { error: { code, message }, ...extra.body }, evaluation: extra.evaluation, transaction: extra.transaction };
}

export function toOutcome(evaluation: Evaluation, transaction: EvaluateRequest, stepUpStatus = DEFAULT_STEP_UP_STATUS): Outcome {
  const { decision, telemetryId } = evaluation;
  const refs = { evaluation, transaction };
  switch (decision) {
    case 'allow':
      return { action: 'continue', evaluation, transaction, redact: (data) => data };
    case 'allow_redacted': {
      const redaction = evaluation.redaction;
      if (!redaction || !Array.isArray(redaction.fields)) break;
      return { action: 'continue', evaluation, transaction, redaction, redact: (data, options) => applyRedaction(data, redaction, options) };
    }
    case 'deny':
      return halt('block', 403, 'transaction_denied', 'This action was blocked.', { ...refs, body: { decision, telemetryId } });
    case 'throttle': {
      const seconds = Math.max(1, Math.ceil(evaluation.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS));
      return halt('throttle', 429, 'transaction_throttled', 'Too many attempts; retry later.', {
        ...refs,
        headers: { 'retry-after': String(seconds) },
        body: { decision, telemetryId, retryAfterSeconds: seconds },
      });
    }
    case 'step_up_required': {
      const challenge = evaluation.challenge;
      if (!challenge?.type || !challenge.id) break;
      return halt('challenge', stepUpStatus, 'step_up_required', `Complete the ${challenge.type} challenge, then retry.`, {
        ...refs,
        headers: { 'x-svc-challenge-type': challenge.type, 'x-svc-challenge-id': challenge.id },
        body: { decision, telemetryId, challenge },
      });
    }
  }
  return halt('block', 403, 'transaction_blocked', 'This action was blocked.', { ...refs, body: { decision: String(decision), telemetryId } });
}
