// Shapes of the AI advisory (issue 6). The assessment itself (AiAssessment, AiStatus) is part of
// the public API and lives in src/api/types.ts; it is re-exported here so src/ai callers need one import.
import type { AiAssessment, AiStatus, RiskBand } from '../api/types.js';

export type { AiAssessment, AiStatus };

/** Defaults and the hard cap from issue 6: a model may move the score by at most 30 points, ever. */
export const AI_DEFAULT_MAX_SCORE_DELTA = 15;
export const AI_HARD_MAX_SCORE_DELTA = 30;
export const AI_DEFAULT_TIMEOUT_MS = 300;

/** Effective advisory settings for one operation (after YAML layering and defaults). */
export interface AiSettings {
  enabled: boolean;
  /** Model name; falls back to TPS_AI_MODEL. */
  model?: string;
  /** Maximum absolute scoreDelta; default 15, never more than 30. */
  maxScoreDelta: number;
  /** Budget of one call; the advisor uses min(this, TPS_AI_TIMEOUT_MS). */
  timeoutMs: number;
  /** Extra fields the model may see: 'actor.id', 'resource.id', 'requestData.<key>'. */
  allowFields: string[];
}

/** What minimize() is built from: the pipeline's already-normalized facts, not the raw request. */
export interface AdvisoryInput {
  operation: { key: string; sensitivity: string; actionType: string; resourceType: string };
  signals: ReadonlyArray<{ name: string; value: number }>;
  score: number;
  band: RiskBand;
  actor: { id: string };
  resource: { id: string; type: string };
  metadata: {
    requestedCount?: number;
    resourceCount?: number;
    velocityWindowCount?: number;
    changedFields?: string[];
  };
  requestData?: Record<string, unknown>;
}

/**
 * The minimized payload that is the only thing a model ever receives. Raw identifiers appear only
 * when allow-listed; IP addresses, user agents, notes and tokens have no field here at all.
 */
export interface AdvisoryView {
  operation: { key: string; sensitivity: string; actionType: string; resourceType: string };
  /** Normalized signal values, each 0..1. */
  signals: Record<string, number>;
  score: number;
  band: RiskBand;
  counts: { requestedCount: number; resourceCount?: number; velocityWindowCount?: number };
  changedFields: string[];
  /** Keys present in requestData (names only, never values). */
  requestDataFields: string[];
  /** requestData.fields: the record fields the caller asks for (names only). */
  requestedFields: string[];
  actorId?: string;
  resourceId?: string;
  /** Allow-listed requestData values ('requestData.amount' etc.): numbers, booleans, short strings. */
  requestData?: Record<string, number | boolean | string>;
}
