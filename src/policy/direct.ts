/**
 * The comparisons that a policy's shorthands (requireRoles, requireRecentHumanSignal, throttle,
 * thresholds) compile to, checked without the engine. Each keeps the meaning of the engine
 * condition it stands beside, which is what the compiled JSON shows and a reviewer reads: its
 * operator as json-rules-engine defines it, and its fact read by the engine's dotted path
 * (test/unit/policy-direct.test.ts runs both on the same facts). A run of json-rules-engine costs
 * ~13 µs before its first rule and ~2 µs a rule; a policy whose rules are all shorthands needs none.
 */
import type { PolicyFacts as Facts } from './run.js';

export type DirectCheck = (facts: Facts) => boolean;

/** The fact `root.key` as the engine reads it: the path resolved in an object, or else the root's own value. */
const read = (facts: Facts, root: string, key: string): unknown => {
  const value = facts[root];
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : value;
};

// json-rules-engine's numeric operators first check the fact with this test.
const numeric = (value: unknown): boolean => Number.parseFloat(value as string).toString() !== 'NaN';

/** `greaterThan` (or `greaterThanInclusive`) of root.key against a constant. */
export function above(root: string, key: string, limit: number, inclusive = false): DirectCheck {
  return (facts) => {
    const value = read(facts, root, key) as number;
    return numeric(value) && (inclusive ? value >= limit : value > limit);
  };
}

/** `not:someFact:in`: root.key is not an array holding one of `allowed`. */
export function noneIn(root: string, key: string, allowed: readonly unknown[]): DirectCheck {
  return (facts) => {
    const value = read(facts, root, key);
    return !(Array.isArray(value) && value.some((v) => allowed.indexOf(v) > -1));
  };
}

/** Any of `exists: false` and `greaterThan limit`: root.key is missing, or above limit. */
export function missingOrAbove(root: string, key: string, limit: number): DirectCheck {
  const over = above(root, key, limit);
  return (facts) => {
    const value = read(facts, root, key);
    return value === undefined || value === null || over(facts);
  };
}
