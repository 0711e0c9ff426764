import type { EvaluateRequest } from '../api/types.js';
import type { CompiledOperation } from '../policy/catalog.js';

/**
 * The normalized inputs of one evaluation: what signals and rules read, and what an event keeps so
 * replay can re-decide it. Free text and network identity (notes, proof tokens, IP, user agent)
 * are deliberately absent.
 */
export interface Facts {
  operation: { key: string; actionType: string; resourceType: string; sensitivity: string };
  actor: { id: string; authenticated?: boolean; roles: string[]; trusted?: boolean; sessionAgeMinutes?: number };
  resource: { type: string; id: string; ownerId?: string; classification?: string; ownedByActor?: boolean };
  requestData: Record<string, unknown>;
  session: {
    sessionId?: string;
    tabId?: string;
    isNewDevice?: boolean;
    continuityStrength?: number;
    humanSignalAgeSeconds?: number;
    geoChanged?: boolean;
    networkChanged?: boolean;
  };
  metadata: {
    requestedCount: number;
    velocityWindowCount?: number;
    changedFields: string[];
    resourceCount?: number;
    abnormalSequence?: boolean;
    objectAccessRare?: boolean;
    suspiciousTimeWindow?: boolean;
    localHour?: number;
    hasProofToken: boolean;
  };
  rawSignals: Record<string, boolean | number>;
}

/** SPEC 2.1: metadata.requestedCount, else requestData.requestedCount, else 1. */
export const requestedCountOf = (req: EvaluateRequest): number => req.metadata?.requestedCount ?? req.requestData?.requestedCount ?? 1;

/**
 * The age of the latest human signal: the caller's measured age when it sent one, else the age of
 * the timestamp by TPS's clock. The measured age wins even when the timestamp looks fresher: the
 * timestamp is the browser's clock, and one running fast (up to the 5 minutes of skew TPS allows)
 * would make old activity look recent.
 */
export function humanSignalAge(session: EvaluateRequest['session'], nowMs: number): number | undefined {
  if (session?.recentHumanSignalAgeSeconds !== undefined) return session.recentHumanSignalAgeSeconds;
  if (!session?.recentHumanSignalAt) return undefined;
  return Math.max(0, (nowMs - Date.parse(session.recentHumanSignalAt)) / 1000);
}

export function buildFacts(req: EvaluateRequest, op: CompiledOperation, nowMs: number): Facts {
  const { actor, resource, session = {}, metadata = {} } = req;
  const roles = actor.roles ? [...actor.roles] : [];
  if (actor.role && !roles.includes(actor.role)) roles.push(actor.role);
  return {
    operation: { key: op.key, actionType: op.actionType, resourceType: op.resourceType, sensitivity: op.sensitivity },
    actor: { id: actor.id, authenticated: actor.authenticated, roles, trusted: actor.trusted, sessionAgeMinutes: actor.sessionAgeMinutes },
    resource: {
      type: resource.type,
      id: resource.id,
      ownerId: resource.ownerId,
      classification: resource.classification?.toLowerCase(),
      ownedByActor: resource.ownerId === undefined ? undefined : resource.ownerId === actor.id,
    },
    requestData: req.requestData ?? {},
    session: {
      sessionId: session.sessionId,
      tabId: session.tabId,
      isNewDevice: session.isNewDevice,
      continuityStrength: session.continuityStrength,
      humanSignalAgeSeconds: humanSignalAge(session, nowMs),
      geoChanged: session.geoChanged,
      networkChanged: session.networkChanged,
    },
    metadata: {
      requestedCount: requestedCountOf(req),
      velocityWindowCount: metadata.velocityWindowCount,
      changedFields: metadata.changedFields ?? [],
      resourceCount: metadata.resourceCount,
      abnormalSequence: metadata.abnormalSequence,
      objectAccessRare: metadata.objectAccessRare,
      suspiciousTimeWindow: metadata.suspiciousTimeWindow,
      localHour: metadata.localHour,
      hasProofToken: metadata.proofToken !== undefined,
    },
    rawSignals: req.rawSignals ?? {},
  };
}

/** Counts and field names only: what an event may keep of the request (SPEC 1, CONTRACT). */
export function requestSummary(req: EvaluateRequest): Record<string, unknown> {
  const summary: Record<string, unknown> = { requestedCount: requestedCountOf(req) };
  if (req.metadata?.changedFields) summary.changedFields = req.metadata.changedFields;
  if (req.metadata?.resourceCount !== undefined) summary.resourceCount = req.metadata.resourceCount;
  if (req.metadata?.velocityWindowCount !== undefined) summary.velocityWindowCount = req.metadata.velocityWindowCount;
  if (req.requestData) summary.requestDataFields = Object.keys(req.requestData);
  if (Array.isArray(req.requestData?.fields)) summary.fields = req.requestData.fields;
  if (req.rawSignals) summary.rawSignalNames = Object.keys(req.rawSignals);
  if (req.challengeResult) summary.challengeResult = { type: req.challengeResult.type, passed: req.challengeResult.passed };
  return summary;
}
