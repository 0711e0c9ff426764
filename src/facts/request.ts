import type { EvaluateRequest } from '../api/types.js';
import type { Facts } from './facts.js';

// The inverse of buildFacts: a request that builds the same facts again. Events keep facts, not
// requests (no notes, proof tokens, IP or user agent), so replay and `tps events to-fixture` go back
// through this to evaluate a recorded transaction on the same code path as a live one.

const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
const nonEmpty = <T extends object>(o: T): T | undefined => (Object.keys(o).length ? o : undefined);

/** A placeholder that only says a proof token was sent; facts keep that, never the token. */
export const REPLAYED_PROOF_TOKEN = 'replayed';

export function requestFromFacts(facts: Facts): EvaluateRequest {
  // Stored facts are JSON: tolerate parts an older or partial event lacks.
  const { actor, resource } = facts;
  const session: Partial<Facts['session']> = facts.session ?? {};
  const metadata: Partial<Facts['metadata']> = facts.metadata ?? {};
  const req: EvaluateRequest = {
    operationKey: facts.operation.key,
    actor: defined({ id: actor.id, authenticated: actor.authenticated, roles: actor.roles?.length ? [...actor.roles] : undefined, trusted: actor.trusted, sessionAgeMinutes: actor.sessionAgeMinutes }),
    resource: defined({ type: resource.type, id: resource.id, ownerId: resource.ownerId, classification: resource.classification }),
  };
  if (facts.requestData && Object.keys(facts.requestData).length) req.requestData = structuredClone(facts.requestData);
  const s = nonEmpty(
    defined({
      sessionId: session.sessionId,
      tabId: session.tabId,
      isNewDevice: session.isNewDevice,
      continuityStrength: session.continuityStrength,
      // The age as it was at evaluation time, so the replay needs no clock.
      recentHumanSignalAgeSeconds: session.humanSignalAgeSeconds,
      geoChanged: session.geoChanged,
      networkChanged: session.networkChanged,
    }),
  );
  if (s) req.session = s;
  const m = defined({
    requestedCount: metadata.requestedCount,
    velocityWindowCount: metadata.velocityWindowCount,
    changedFields: metadata.changedFields?.length ? [...metadata.changedFields] : undefined,
    resourceCount: metadata.resourceCount,
    abnormalSequence: metadata.abnormalSequence,
    objectAccessRare: metadata.objectAccessRare,
    suspiciousTimeWindow: metadata.suspiciousTimeWindow,
    localHour: metadata.localHour,
    proofToken: metadata.hasProofToken ? REPLAYED_PROOF_TOKEN : undefined,
  });
  req.metadata = m;
  if (facts.rawSignals && Object.keys(facts.rawSignals).length) req.rawSignals = { ...facts.rawSignals };
  return req;
}
