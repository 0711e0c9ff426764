// The condition operators validation accepts, and the shape of `value` each of them needs.

export const OPERATORS = [
  'equal', 'notEqual', 'lessThan', 'lessThanInclusive', 'greaterThan', 'greaterThanInclusive',
  'in', 'notIn', 'contains', 'doesNotContain', 'exists',
] as const;
type Operator = (typeof OPERATORS)[number];
export const DECORATORS = ['someFact', 'someValue', 'everyFact', 'everyValue', 'swap', 'not'];

/** `not:someFact:in` → its decorators, outermost first, and the operator they decorate; undefined when unknown. */
export function parseOperator(name: string): { decorators: string[]; operator: Operator } | undefined {
  const decorators = name.split(':');
  const operator = decorators.pop() as Operator;
  if (!OPERATORS.includes(operator) || !decorators.every((d) => DECORATORS.includes(d))) return undefined;
  return { decorators, operator };
}

/** What a value must be, described for a message in the singular and the plural. */
interface Shape {
  fits(v: unknown): boolean;
  one: string;
  many: string;
}
const SCALAR: Shape = { fits: (v) => ['string', 'number', 'boolean'].includes(typeof v), one: 'a string, number or boolean', many: 'strings, numbers or booleans' };
const NUMBER: Shape = { fits: (v) => Number.isFinite(v), one: 'a number', many: 'numbers' };
const BOOLEAN: Shape = { fits: (v) => typeof v === 'boolean', one: 'true or false', many: 'true or false values' };
// Non-empty: `in: []` never matches and `notIn: []` always does (someValue and everyValue over
// nothing likewise), almost surely a slip in a security policy rather than its intent.
const listOf = (item: Shape): Shape => ({
  fits: (v) => Array.isArray(v) && v.length > 0 && v.every(item.fits),
  one: `a non-empty list of ${item.many}`,
  many: `non-empty lists of ${item.many}`,
});

// The operators as they read their value: `in` looks the fact up in the value, which TPS's
// in/notIn (lists.ts) take as empty when it is not a list (`in: "abc"` would silently never match),
// `contains` the value in the fact, the comparisons want numbers; TPS's `exists` compares to a boolean.
const AS_VALUE: Record<Operator, Shape> = {
  equal: SCALAR, notEqual: SCALAR, in: listOf(SCALAR), notIn: listOf(SCALAR), contains: SCALAR, doesNotContain: SCALAR,
  lessThan: NUMBER, lessThanInclusive: NUMBER, greaterThan: NUMBER, greaterThanInclusive: NUMBER, exists: BOOLEAN,
};
// After `swap:` the value stands where the fact would.
const AS_FACT: Record<Operator, Shape> = {
  ...AS_VALUE, in: SCALAR, notIn: SCALAR, contains: listOf(SCALAR), doesNotContain: listOf(SCALAR), exists: SCALAR,
};

const VALUE_ITEMS = ['someValue', 'everyValue'];
const FACT_ITEMS = ['someFact', 'everyFact'];

/**
 * The shape a condition's value needs under a decorated operator. Decorators apply outermost first:
 * someValue/everyValue hand the operator each item of the value (so it must be a list of what the
 * operator takes), someFact/everyFact each item of the fact, and swap exchanges value and fact.
 */
function shapeFor(decorators: readonly string[], operator: Operator): Shape {
  let swapped = false;
  let lists = 0;
  for (const d of decorators) {
    if (d === 'swap') swapped = !swapped;
    else if ((swapped ? FACT_ITEMS : VALUE_ITEMS).includes(d)) lists++;
  }
  let shape = (swapped ? AS_FACT : AS_VALUE)[operator];
  for (let i = 0; i < lists; i++) shape = listOf(shape);
  return shape;
}

/** A value that is an object reads another fact when the rule runs: `{ fact: <path> }` (the schema checks its one key). */
export const isFactReference = (v: unknown): v is { fact: unknown } => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What is wrong with a literal value for an operator, to follow the value's YAML path, or undefined.
 * A fact reference is only known when the rule runs; `exists` takes a literal true or false.
 */
export function valueProblem(operatorName: string, value: unknown): string | undefined {
  const parsed = parseOperator(operatorName);
  if (!parsed) return undefined;
  if (isFactReference(value) && parsed.operator !== 'exists') return undefined;
  const shape = shapeFor(parsed.decorators, parsed.operator);
  return shape.fits(value) ? undefined : `must be ${shape.one} for operator ${operatorName}`;
}
