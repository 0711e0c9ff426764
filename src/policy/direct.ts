import { inList } from './lists.js';
import type { ConditionSpec } from './schema.js';
import type { PolicyFacts as Facts } from './run.js';

/**
 * The shorthands' conditions (requireRoles, requireRecentHumanSignal, throttle, thresholds),
 * checked without the engine. A check is made from the very condition the compiled form shows and
 * the version id hashes, with the meaning TPS's engines give it: their operators (engines.ts,
 * lists.ts), its facts read by the engine's resolver (test/unit/policy-direct.test.ts runs both
 * on the same facts). A run of json-rules-engine costs ~13 µs before its first rule and ~2 µs a
 * rule; a policy whose rules are all shorthands needs none.
 */
export type DirectCheck = (facts: Facts) => boolean;

/**
 * A key of a fact's value, its own only: `requestData.constructor` is absent when the caller sent
 * no such key, not the function every object inherits.
 */
export const ownProperty = (value: unknown, key: string): unknown =>
  value !== null && value !== undefined && Object.hasOwn(value as object, key) ? (value as Record<string, unknown>)[key] : undefined;

/** The engine's path resolver (compile.ts): a plain dotted path, no JSONPath. */
export const dotted = (root: object, path: string): unknown => {
  let value: unknown = root;
  for (let start = 0; start <= path.length; ) {
    const end = path.indexOf('.', start);
    value = ownProperty(value, end < 0 ? path.slice(start) : path.slice(start, end));
    if (end < 0) break;
    start = end + 1;
  }
  return value;
};

/** TPS's own operator, added to every engine (compile.ts). */
export const exists = (fact: unknown, want: unknown): boolean => (fact !== undefined && fact !== null) === want;

// json-rules-engine's numeric operators first check the fact with this test.
const numeric = (value: unknown): boolean => Number.parseFloat(value as string).toString() !== 'NaN';

/** The operators the shorthands use, as TPS's engines evaluate them (engines.ts). */
const OPERATORS: Record<string, (fact: unknown, value: unknown) => boolean> = {
  greaterThan: (fact, value) => numeric(fact) && (fact as number) > (value as number),
  greaterThanInclusive: (fact, value) => numeric(fact) && (fact as number) >= (value as number),
  exists,
  // The decorators not: and someFact: around `in`.
  'not:someFact:in': (fact, value) => !(Array.isArray(fact) && fact.some((f) => inList(f, value))),
};

/** A shorthand's condition (a leaf, or `any` of leaves) as a check; a compile-time error for any other. */
export function directCheck(condition: ConditionSpec): DirectCheck {
  if ('any' in condition) {
    const parts = condition.any.map(directCheck);
    return (facts) => parts.some((p) => p(facts));
  }
  if ('all' in condition || 'not' in condition) throw new Error('a shorthand is a comparison, or any of several');
  const operator = OPERATORS[condition.operator];
  if (!operator) throw new Error(`no direct check for the operator ${condition.operator}`);
  const { value } = condition;
  const dot = condition.fact.indexOf('.');
  const root = dot < 0 ? condition.fact : condition.fact.slice(0, dot);
  const path = dot < 0 ? undefined : condition.fact.slice(dot + 1);
  // As the engine's almanac: the path is resolved in an object root; any other root is the value.
  return (facts) => {
    const fact = facts[root];
    return operator(path !== undefined && fact !== null && typeof fact === 'object' ? dotted(fact, path) : fact, value);
  };
}
