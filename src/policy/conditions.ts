import type { TopLevelCondition } from 'json-rules-engine';
import { isFactReference } from './operators.js';
import type { ConditionSpec } from './schema.js';

// YAML names a fact by its dotted path; json-rules-engine wants the root fact and a path inside it.
function engineFact(dotted: string): { fact: string; path?: string } {
  const dot = dotted.indexOf('.');
  return dot < 0 ? { fact: dotted } : { fact: dotted.slice(0, dot), path: dotted.slice(dot + 1) };
}

export function toEngineCondition(spec: ConditionSpec): Record<string, unknown> {
  if ('all' in spec) return { all: spec.all.map(toEngineCondition) };
  if ('any' in spec) return { any: spec.any.map(toEngineCondition) };
  if ('not' in spec) return { not: toEngineCondition(spec.not) };
  // A value `{ fact: <path> }` names its fact as a leaf does (the engine would look for a fact called "metadata.x").
  const value = isFactReference(spec.value) ? engineFact(String(spec.value.fact)) : spec.value;
  const { fact, path } = engineFact(spec.fact);
  return { fact, operator: spec.operator, value, ...(path === undefined ? {} : { path }) };
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

/** Each fact path a condition names, a leaf's and a `value: { fact }`'s, with the YAML path that names it. */
export function factPathsOf(condition: unknown, at: string): { fact: string; path: string }[] {
  if (condition === null || typeof condition !== 'object') return [];
  const c = condition as Record<string, unknown>;
  const list = (key: string) => (Array.isArray(c[key]) ? (c[key] as unknown[]).flatMap((sub, i) => factPathsOf(sub, `${at}.${key}[${i}]`)) : []);
  const own = typeof c.fact === 'string' ? [{ fact: c.fact, path: `${at}.fact` }] : [];
  const value = isFactReference(c.value) && typeof c.value.fact === 'string' ? [{ fact: c.value.fact, path: `${at}.value.fact` }] : [];
  return [...own, ...value, ...list('all'), ...list('any'), ...factPathsOf(c.not, `${at}.not`)];
}
