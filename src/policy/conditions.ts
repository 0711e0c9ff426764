import type { TopLevelCondition } from 'json-rules-engine';
import type { ConditionSpec } from './schema.js';

// YAML names a fact by its dotted path; json-rules-engine wants the root fact and a path inside it.
export function toEngineCondition(spec: ConditionSpec): Record<string, unknown> {
  if ('all' in spec) return { all: spec.all.map(toEngineCondition) };
  if ('any' in spec) return { any: spec.any.map(toEngineCondition) };
  if ('not' in spec) return { not: toEngineCondition(spec.not) };
  const dot = spec.fact.indexOf('.');
  const leaf: Record<string, unknown> = { fact: dot < 0 ? spec.fact : spec.fact.slice(0, dot), operator: spec.operator, value: spec.value };
  if (dot >= 0) leaf.path = spec.fact.slice(dot + 1);
  return leaf;
}

export function toTopLevel(spec: ConditionSpec | undefined): TopLevelCondition {
  if (!spec) return { all: [] };
  const c = toEngineCondition(spec);
  return ('all' in c || 'any' in c || 'not' in c ? c : { all: [c] }) as unknown as TopLevelCondition;
}

export const leaf = (fact: string, operator: string, value: unknown): ConditionSpec => ({ fact, operator, value });

/** The root facts a condition reads, its leaves' and any fact a value refers to (`value: { fact }`). */
export function factsOf(condition: unknown): string[] {
  if (condition === null || typeof condition !== 'object') return [];
  if (Array.isArray(condition)) return condition.flatMap(factsOf);
  const c = condition as Record<string, unknown>;
  const own = typeof c.fact === 'string' ? [c.fact] : [];
  return [...own, ...factsOf(c.all), ...factsOf(c.any), ...factsOf(c.not), ...factsOf(c.value)];
}
