// Synthetic decisions stand in for TPS when it cannot answer and failureMode is open or closed.
// They are marked (`synthetic: true`, a reason and a warning) so logs never mistake them for
// real evaluations, and their telemetryId is prefixed so it is never looked up in the Event Stream.

import type { EvaluateRequest, EvaluateResponse } from '../api/types.js';
import { TpsError } from './errors.js';

export interface Evaluation extends EvaluateResponse {
  /** True when the client made this decision itself because TPS was unavailable. */
  synthetic?: boolean;
  /** Why TPS was unavailable; present on synthetic decisions only. */
  failure?: { code: string; message: string; status?: number; requestId?: string };
}

export const FAIL_OPEN_REASON = 'tps_unavailable_fail_open';
export const FAIL_CLOSED_REASON = 'tps_unavailable_fail_closed';

export function syntheticDecision(tx: EvaluateRequest, mode: 'open' | 'closed', error: TpsError): Evaluation {
  const open = mode === 'open';
  return {
    decision: open ? 'allow' : 'deny',
    score: open ? 0 : 100,
    riskBand: open ? 'low' : 'high',
    reasons: [open ? FAIL_OPEN_REASON : FAIL_CLOSED_REASON],
    telemetryId: `synthetic_${globalThis.crypto.randomUUID()}`,
    operationKey: tx.operationKey,
    operationDisplayName: tx.operationKey,
    actionType: 'unknown',
    resourceType: tx.resource?.type ?? 'unknown',
    sensitivity: 'unknown',
    policyId: 'synthetic',
    warnings: ['tps_unavailable'],
    synthetic: true,
    failure: { code: String(error.code), message: error.message, status: error.status, requestId: error.requestId },
  };
}

/** The failure a synthetic decision stands for, as the TpsError it was made from (for onError). */
export function syntheticFailure(evaluation: Evaluation): TpsError | undefined {
  if (evaluation.synthetic !== true || !evaluation.failure) return undefined;
  return new TpsError({ ...evaluation.failure });
}
