// The YAML `ai:` block (per operation or per policy) and its resolution into AiSettings.
// The config loader validates blocks with aiConfigSchema so a bad block fails at start, not mid-call.
import { strictObject, yup } from '../validate/kit.js';
import {
  AI_DEFAULT_MAX_SCORE_DELTA,
  AI_DEFAULT_TIMEOUT_MS,
  AI_HARD_MAX_SCORE_DELTA,
  type AiSettings,
} from './types.js';

/** Allow-list entries that minimize() understands; anything else is a config error. */
export const ALLOW_FIELD_PATTERN = /^(actor\.id|resource\.id|requestData\.[A-Za-z0-9_]{1,64})$/;

/** One `ai:` block as written in YAML; every key optional so blocks can layer. */
export interface AiConfigBlock {
  enabled?: boolean;
  model?: string;
  maxScoreDelta?: number;
  timeoutMs?: number;
  allowFields?: string[];
}

// The one schema of the YAML `ai:` block; src/policy/schema.ts uses it for operations and policies.
export const aiConfigSchema = strictObject({
  enabled: yup.boolean(),
  model: yup.string().min(1).max(200),
  maxScoreDelta: yup.number().min(0).max(AI_HARD_MAX_SCORE_DELTA),
  timeoutMs: yup.number().integer().min(1).max(60_000),
  allowFields: yup.array(
    yup.string().required().matches(ALLOW_FIELD_PATTERN, '${path} must be actor.id, resource.id or requestData.<key>'),
  ),
});

/**
 * Layers blocks left to right (later keys win, e.g. operation then policy) over the defaults.
 * No block at all means the advisory is off; a block without `enabled` means on.
 */
export function resolveAiSettings(...blocks: Array<AiConfigBlock | undefined | null>): AiSettings {
  const present = blocks.filter((b): b is AiConfigBlock => b != null);
  const merged: AiConfigBlock = Object.assign({}, ...present);
  return {
    enabled: present.length > 0 && merged.enabled !== false,
    model: merged.model,
    maxScoreDelta: effectiveMaxDelta(merged.maxScoreDelta),
    timeoutMs: merged.timeoutMs && merged.timeoutMs > 0 ? merged.timeoutMs : AI_DEFAULT_TIMEOUT_MS,
    allowFields: merged.allowFields ?? [],
  };
}

/** Whole points (scores are integers) within ±maxDelta. */
export function clampDelta(delta: number, maxDelta: number): number {
  const cap = Math.floor(maxDelta);
  const clamped = Math.min(cap, Math.max(-cap, Math.round(delta)));
  return clamped === 0 ? 0 : clamped; // no -0 in evidence
}

/** The cap applied to a model's delta: the configured maximum, defaulted, never above the hard cap. */
export function effectiveMaxDelta(maxScoreDelta: number | undefined): number {
  const v = maxScoreDelta === undefined || !Number.isFinite(maxScoreDelta) ? AI_DEFAULT_MAX_SCORE_DELTA : maxScoreDelta;
  return Math.min(Math.max(v, 0), AI_HARD_MAX_SCORE_DELTA);
}
