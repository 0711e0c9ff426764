import { factType, type FactType } from '../facts/paths.js';
import { isFactReference, parseOperator } from './operators.js';
import type { SignalSpec } from './schema.js';

// A condition on a fact whose type TPS knows (src/facts/paths.ts) that could never match it as
// meant: `in` on actor.roles compares the whole list (never in, always notIn), `equal: PII` on
// resource.classification, which is lower-cased, `exists: false` on a fact always there. Such a
// deny rule would silently never fire, or fire for everyone; validation refuses it.

export interface TypeProblem {
  /** Which key of the condition is at fault. */
  at: 'operator' | 'value';
  message: string;
}

const NUMERIC = ['lessThan', 'lessThanInclusive', 'greaterThan', 'greaterThanInclusive'];
const kindName = (t: FactType) => (t.kind === 'list' ? 'a list' : t.kind === 'boolean' ? 'true or false' : `a ${t.kind}`);

/** The scalars a literal value holds, however deep its lists. */
const scalars = (value: unknown): unknown[] => (Array.isArray(value) ? value.flatMap(scalars) : [value]);

/**
 * What is wrong with a literal for a comparison with a fact of this type (a list's items are
 * strings). A literal that can never be the fact makes a positive comparison never match and a
 * negative one (notEqual, notIn, doesNotContain, or not: over a positive one) always hold.
 */
function literalProblem(label: string, type: FactType, value: unknown, negative: boolean): TypeProblem | undefined {
  if (isFactReference(value)) return undefined;
  const kind = type.kind === 'list' ? 'string' : type.kind;
  const outcome = negative ? 'always holds' : 'can never match';
  for (const v of scalars(value)) {
    if (typeof v !== kind) return { at: 'value', message: `${outcome}: ${type.kind === 'list' ? `the items of ${label} are strings` : `${label} is ${kindName(type)}`}, never ${JSON.stringify(v)}` };
    if (type.lowerCased && typeof v === 'string' && v !== v.toLowerCase()) {
      return { at: 'value', message: `${outcome}: ${label} is always lower-case, never ${JSON.stringify(v)}; write ${JSON.stringify(v.toLowerCase())}` };
    }
  }
  return undefined;
}

// What to write instead of an operator that compares a list as a whole: one value, or several.
const FOR_ITEMS: Record<string, [string, string]> = {
  equal: ['contains', 'someFact:in'],
  in: ['contains', 'someFact:in'],
  contains: ['contains', 'someFact:in'],
  notEqual: ['doesNotContain', 'not:someFact:in'],
  notIn: ['doesNotContain', 'not:someFact:in'],
  doesNotContain: ['doesNotContain', 'not:someFact:in'],
};
const negate = (op: string) => (op.startsWith('not:') ? op.slice(4) : `not:${op}`);

/** The problem of a condition `{ fact, operator, value }` with its fact's type, or undefined. */
export function factTypeProblem(fact: string, operatorName: string, value: unknown): TypeProblem | undefined {
  let type = factType(fact);
  const parsed = parseOperator(operatorName);
  if (!type || !parsed) return undefined;
  const { operator } = parsed;
  const op = (message: string): TypeProblem => ({ at: 'operator', message: `${operatorName} ${message}` });
  let swapped = false;
  let negated = false;
  let whole = true;
  let label = fact;
  for (const d of parsed.decorators) {
    if (d === 'not') negated = !negated;
    else if (d === 'swap') swapped = !swapped;
    // someFact/everyFact hand the operator each item of the fact (someValue/everyValue after swap).
    else if (d.endsWith(swapped ? 'Value' : 'Fact')) {
      if (type.kind !== 'list') return op(`looks at the items of a list, and ${label} is ${kindName(type)}, never a list: it can never match; drop ${d}:`);
      type = { kind: 'string' };
      whole = false;
      label = `each item of ${fact}`;
    }
  }

  if (operator === 'exists') {
    // (One that always holds, `exists: true`, only says what is known.)
    if (!type.always || !whole || swapped || value !== negated) return undefined;
    return { at: 'value', message: `${operatorName}: ${value} never holds: ${fact} is on every request${fact === 'metadata.changedFields' ? ' (an empty list when none were sent)' : ''}; drop the condition` };
  }
  if (NUMERIC.includes(operator)) {
    return type.kind === 'number' ? undefined : op(`compares numbers, and ${label} is ${kindName(type)}: it can never match as meant${type.kind === 'list' ? `; use someFact:${operator}` : ''}`);
  }
  // Whether the comparison holds where its positive form would not.
  const negative = /^not|^does/.test(operator) !== negated;
  // The side looked inside: contains's fact, in's value; swap exchanges them.
  const factIsTheList = (operator === 'contains' || operator === 'doesNotContain') !== swapped;
  if (operator === 'equal' || operator === 'notEqual' || !factIsTheList) {
    if (type.kind === 'list') {
      const [one, several] = FOR_ITEMS[operator]!.map((o) => (negated ? negate(o) : o));
      const holds = negative ? 'always holds' : 'never holds';
      return op(`compares ${fact}, a list, as a whole: it ${holds}; to test its items use ${one} (one value) or ${several} (${several.startsWith('not:') ? 'none' : 'any'} of several)`);
    }
    return literalProblem(label, type, value, negative);
  }
  if (type.kind !== 'list') {
    const instead = operator === 'contains' || operator === 'in' ? 'equal' : 'notEqual';
    return op(`looks inside a list, and ${label} is ${kindName(type)}, never a list: it can never match as meant; use ${swapped ? `${instead} (no swap:)` : instead}`);
  }
  return literalProblem(label, type, value, negative);
}

// Signals are held to the same types: a transform reads one kind of value (src/risk/signals.ts),
// and a fact of another kind leaves the signal at its `missing` value on every request; a `flag`'s
// `equals` or a `map`'s key that the fact can never be never fires. `clamp` also counts a boolean.
const TRANSFORM_READS: Record<SignalSpec['transform'], { kinds: readonly FactType['kind'][]; what: string }> = {
  flag: { kinds: ['string', 'number', 'boolean'], what: 'a single value' },
  clamp: { kinds: ['number', 'boolean'], what: 'a number (or true or false)' },
  inverse: { kinds: ['number'], what: 'a number' },
  ramp: { kinds: ['number'], what: 'a number' },
  between: { kinds: ['number'], what: 'a number' },
  nonEmpty: { kinds: ['list'], what: 'a list' },
  map: { kinds: ['string'], what: 'a string' },
};
// What reads a fact of each kind.
const TRANSFORMS_FOR: Record<FactType['kind'], string> = {
  list: 'nonEmpty',
  string: 'map, or flag with equals',
  number: 'clamp, inverse, ramp or between',
  boolean: 'flag',
};

export interface SignalTypeProblem {
  /** The key of the signal at fault: transform, equals or values.<key>. */
  at: string;
  message: string;
}

/** The problems of a signal `{ fact, transform, equals, values }` with its fact's type (none for a fact of unknown type). */
export function signalTypeProblems(spec: { fact: string; transform: string; equals?: unknown; values?: object; missing?: number }): SignalTypeProblem[] {
  const type = factType(spec.fact);
  const reads = Object.hasOwn(TRANSFORM_READS, spec.transform) ? TRANSFORM_READS[spec.transform as SignalSpec['transform']] : undefined;
  if (!type || !reads) return [];
  if (!reads.kinds.includes(type.kind)) {
    return [{ at: 'transform', message: `${spec.transform} reads ${reads.what}, and ${spec.fact} is ${kindName(type)}: the signal would always be its missing value (${spec.missing ?? 0}); use ${TRANSFORMS_FOR[type.kind]}` }];
  }
  if (spec.transform === 'flag') {
    if (spec.equals === undefined) {
      return type.kind === 'boolean' ? [] : [{ at: 'transform', message: `flag without equals compares ${spec.fact} with true, and it is ${kindName(type)}, never true: it can never fire; write equals${type.kind === 'number' ? ', or use between or ramp for a range' : ''}` }];
    }
    const problem = literalProblem(spec.fact, type, spec.equals, false);
    return problem ? [{ at: 'equals', message: problem.message }] : [];
  }
  if (spec.transform === 'map' && typeof spec.values === 'object' && spec.values !== null && !Array.isArray(spec.values)) {
    return Object.keys(spec.values).flatMap((key) => {
      const problem = literalProblem(spec.fact, type, key, false);
      return problem ? [{ at: `values.${key}`, message: problem.message }] : [];
    });
  }
  return [];
}
