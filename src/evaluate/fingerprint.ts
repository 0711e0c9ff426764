import crypto from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { EvaluateRequest } from '../api/types.js';
import { requestedCountOf } from '../facts/facts.js';

/**
 * CONTRACT: a challenge is bound to environment, operation, actor, resource, requestData and session.
 * Beyond it, the metadata that says what the transaction does (the canonical count policies decide
 * on, resourceCount, changedFields), so a retry cannot claim a larger action than was challenged.
 * Proof tokens, velocity counts, local hour, notes and the booleans may differ on a retry.
 * Two requests the policy cannot tell apart get the same fingerprint, so a retry written another
 * way (no requestData for `{}`, changedFields in another order) still finds its challenge.
 */
export function transactionFingerprint(environment: string, req: EvaluateRequest): string {
  const m = req.metadata;
  const material = stringify([
    environment,
    req.operationKey,
    req.actor.id,
    req.resource.type,
    req.resource.id,
    requestDataOf(req),
    req.session?.sessionId ?? null,
    requestedCountOf(req),
    m?.resourceCount ?? null,
    changedFieldSet(m?.changedFields),
  ]);
  return crypto.createHash('sha256').update(material ?? '').digest('base64url');
}

// Facts read absent requestData as {}; both hash as absent did before, so a challenge issued
// before this reading for a request without requestData still matches. Its lists stay in order,
// `fields` too: any path under requestData is a fact, so a rule can read `requestData.fields.0`
// or `requestData.fields.length`, and another order or a repeat can decide otherwise.
const requestDataOf = (req: EvaluateRequest): EvaluateRequest['requestData'] | null => (req.requestData && Object.keys(req.requestData).length > 0 ? req.requestData : null);

// SPEC 2.1: the names of the fields changed, a set. Rules and signals only ask what it holds (someFact,
// contains, nonEmpty), never its order or repeats. Absent and empty read the same, as in the facts.
// A list already sorted without repeats hashes as before.
function changedFieldSet(fields: string[] | undefined): string[] {
  if (!fields || fields.length < 2) return fields ?? [];
  return [...new Set(fields)].sort();
}
