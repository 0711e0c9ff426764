// Builds the only payload a model sees. Everything is picked by name from known fields (never
// spread), so whatever extra the caller's objects carry (session.ipAddress, metadata.notes,
// proofToken…) cannot leak in, even if the pipeline hands over the whole request objects.
import type { AdvisoryInput, AdvisoryView, AiSettings } from './types.js';

/** Names sent to the model must look like field names, not free text smuggled in as a "name". */
const NAME = /^[A-Za-z0-9_.:\-[\]]{1,64}$/;
const MAX_NAMES = 50;
const MAX_STRING_VALUE = 64;
/** Even if allow-listed, requestData keys that look like secrets or network identity are never sent. */
const NEVER_SEND = /token|secret|passw|credential|auth|cookie|session|api.?key|ip.?addr|user.?agent|notes/i;

export function minimize(input: AdvisoryInput, settings: Pick<AiSettings, 'allowFields'>): AdvisoryView {
  const allow = new Set(settings.allowFields);
  const requestData = isRecord(input.requestData) ? input.requestData : {};
  const md = input.metadata ?? {};

  const view: AdvisoryView = {
    operation: {
      key: input.operation.key,
      sensitivity: input.operation.sensitivity,
      actionType: input.operation.actionType,
      resourceType: input.operation.resourceType,
    },
    signals: signalMap(input.signals),
    score: input.score,
    band: input.band,
    // SPEC 2.1: requestedCount falls back to requestData.requestedCount, then 1.
    counts: { requestedCount: count(md.requestedCount) ?? count(requestData.requestedCount) ?? 1 },
    changedFields: names(md.changedFields),
    requestDataFields: names(Object.keys(requestData)),
    requestedFields: names(requestData.fields),
  };
  const resourceCount = count(md.resourceCount);
  if (resourceCount !== undefined) view.counts.resourceCount = resourceCount;
  const velocity = count(md.velocityWindowCount);
  if (velocity !== undefined) view.counts.velocityWindowCount = velocity;

  if (allow.has('actor.id')) view.actorId = input.actor.id;
  if (allow.has('resource.id')) view.resourceId = input.resource.id;

  const picked: Record<string, number | boolean | string> = {};
  for (const entry of allow) {
    if (!entry.startsWith('requestData.')) continue;
    const key = entry.slice('requestData.'.length);
    if (NEVER_SEND.test(key) || !Object.prototype.hasOwnProperty.call(requestData, key)) continue;
    const value = requestData[key];
    if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') picked[key] = value;
    else if (typeof value === 'string' && value.length <= MAX_STRING_VALUE) picked[key] = value;
  }
  if (Object.keys(picked).length > 0) view.requestData = picked;
  return view;
}

function signalMap(signals: AdvisoryInput['signals']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of signals ?? []) {
    if (!NAME.test(s.name) || typeof s.value !== 'number' || !Number.isFinite(s.value)) continue;
    out[s.name] = Math.min(Math.max(s.value, 0), 1);
  }
  return out;
}

function names(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  const out = value.filter((v): v is string => typeof v === 'string' && NAME.test(v));
  return [...new Set(out)].slice(0, MAX_NAMES);
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
