import crypto from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import type { EvaluateRequest } from '../api/types.js';

/** CONTRACT: a challenge is bound to environment, operation, actor, resource, requestData and session. */
export function transactionFingerprint(environment: string, req: EvaluateRequest): string {
  const material = stringify([environment, req.operationKey, req.actor.id, req.resource.type, req.resource.id, req.requestData ?? null, req.session?.sessionId ?? null]);
  return crypto.createHash('sha256').update(material ?? '').digest('base64url');
}
