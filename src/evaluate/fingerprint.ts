import crypto from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { EvaluateRequest } from '../api/types.js';
import { requestedCountOf } from '../facts/facts.js';

/**
 * CONTRACT: a challenge is bound to environment, operation, actor, resource, requestData and session.
 * Beyond it, the metadata that says what the transaction does (the canonical count policies decide
 * on, resourceCount, changedFields), so a retry cannot claim a larger action than was challenged.
 * Proof tokens, velocity counts, local hour, notes and the booleans may differ on a retry.
 */
export function transactionFingerprint(environment: string, req: EvaluateRequest): string {
  const m = req.metadata;
  const material = stringify([
    environment,
    req.operationKey,
    req.actor.id,
    req.resource.type,
    req.resource.id,
    req.requestData ?? null,
    req.session?.sessionId ?? null,
    requestedCountOf(req),
    m?.resourceCount ?? null,
    // Absent and empty read the same (facts.metadata.changedFields).
    m?.changedFields ?? [],
  ]);
  return crypto.createHash('sha256').update(material ?? '').digest('base64url');
}
