import * as yup from 'yup';
import type { ErrorDetail } from '../api/types.js';
import { compileFastAccept } from './fastAccept.js';
import { CONTROL_OR_LONE_SURROGATE, MAX_ID_LENGTH, NUL_OR_LONE_SURROGATE } from './characters.js';

// Plain messages, so an error reads "session.continuityStrength must be at most 1" wherever it shows.
yup.setLocale({
  mixed: {
    required: ({ path }) => `${path} is required`,
    notNull: ({ path }) => `${path} must not be null`,
    notType: ({ path, type }) => `${!path || path === 'this' ? 'the body' : path} must be ${type === 'object' ? 'an object' : type === 'array' ? 'an array' : `a ${type}`}`,
    oneOf: ({ path, values }) => `${path} must be one of: ${values}`,
  },
  string: {
    min: ({ path, min }) => `${path} must be at least ${min} characters`,
    max: ({ path, max }) => `${path} must be at most ${max} characters`,
  },
  number: {
    min: ({ path, min }) => `${path} must be at least ${min}`,
    max: ({ path, max }) => `${path} must be at most ${max}`,
    integer: ({ path }) => `${path} must be an integer`,
  },
  array: {
    min: ({ path, min }) => `${path} must have at least ${min} item${min === 1 ? '' : 's'}`,
    max: ({ path, max }) => `${path} must have at most ${max} items`,
  },
});

export { yup };

/**
 * A message yup shows as it is. yup expands every `${name}` in a string message, `${value}` into the
 * whole value validated (JSON.stringify of a request's root): a message that embeds a key the caller
 * chose must never be a string, or a key `${value}` makes a small body a huge answer, a deep one a 500.
 * A `${path}` template stays safe: yup replaces in one pass, so a `${…}` in the path is not expanded.
 */
export const asIs = (text: string) => () => text;

// A string the store cannot hold (characters.ts) is the caller's 400 here, never a failed commit.
const SAFE_ID_MESSAGE = 'must not contain control characters or unpaired surrogates';
const SAFE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';
const safeId = { name: 'safe-id', message: `\${path} ${SAFE_ID_MESSAGE}`, skipAbsent: true, test: (v: string | undefined) => v === undefined || !CONTROL_OR_LONE_SURROGATE.test(v) };
const safeText = { name: 'safe-text', message: `\${path} ${SAFE_TEXT_MESSAGE}`, skipAbsent: true, test: (v: string | undefined) => v === undefined || !NUL_OR_LONE_SURROGATE.test(v) };

/** An identifier: 1 to `max` characters, no control characters, well-formed UTF-16. */
export const id = (max = MAX_ID_LENGTH) => yup.string().min(1).max(max).test(safeId);
/** Free text: at most `max` characters, no NUL, well-formed UTF-16. */
export const text = (max: number) => yup.string().max(max).test(safeText);
/** A number JSON can carry: 1e400 parses to Infinity, which yup's number() accepts. */
export const finite = () => yup.number().test({ name: 'finite', message: '${path} must be a finite number', skipAbsent: true, test: (v: number | undefined) => v === undefined || Number.isFinite(v) });

/** How deeply free-form JSON (requestData's own keys, an ingested requestSummary) may nest objects and arrays. */
export const MAX_NESTING = 8;

/** How many problems of one free-form object are listed: enough to fix a body, bounded for a hostile one. */
export const MAX_FREE_FORM_PROBLEMS = 20;

/** How many details one error lists: enough to fix a body, bounded for a hostile one. */
export const MAX_DETAILS = 50;
/** The longest path a detail shows (paths hold the caller's keys, which no schema bounds); longer ones are cut, with "…". */
export const MAX_PATH_CHARS = 200;

type Problem = { path: string; message: string };

/**
 * The problems of a free-form JSON object (the first MAX_FREE_FORM_PROBLEMS): keys that are not
 * safe identifiers, strings that are not safe text, numbers that are not finite, and objects and
 * arrays nested more than MAX_NESTING deep (later JSON.stringify calls recurse and would overflow
 * the stack; what lies below one is not walked). Walks with a queue of its own, so a deep value
 * cannot overflow it here. `skip` names top-level keys checked by a schema of their own.
 */
export function freeFormProblems(root: object, path: string, skip?: ReadonlySet<string>): Problem[] {
  const problems: Problem[] = [];
  // Breadth first, read by index (a queue without shift()): outer problems come first.
  const queue: [value: object, path: string, depth: number][] = [[root, path, 0]];
  for (let i = 0; i < queue.length; i++) {
    const [value, at, depth] = queue[i]!;
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      if (depth === 0 && skip?.has(key)) continue;
      if (!isArray && CONTROL_OR_LONE_SURROGATE.test(key)) problems.push({ path: at, message: `${at} has a key that ${SAFE_ID_MESSAGE}` });
      const child = (value as Record<string, unknown>)[key];
      // The path is built only for a problem or a container: most values are fine scalars.
      const childPath = () => (isArray ? `${at}[${key}]` : `${at}.${key}`);
      if (typeof child === 'string') {
        if (NUL_OR_LONE_SURROGATE.test(child)) problems.push({ path: childPath(), message: `${childPath()} ${SAFE_TEXT_MESSAGE}` });
      } else if (typeof child === 'number') {
        if (!Number.isFinite(child)) problems.push({ path: childPath(), message: `${childPath()} must be a finite number` });
      } else if (typeof child === 'object' && child !== null) {
        if (depth + 1 > MAX_NESTING) problems.push({ path: childPath(), message: `${childPath()} nests objects and arrays deeper than ${MAX_NESTING} levels` });
        else queue.push([child, childPath(), depth + 1]);
      }
      if (problems.length >= MAX_FREE_FORM_PROBLEMS) return problems.slice(0, MAX_FREE_FORM_PROBLEMS);
    }
  }
  return problems;
}

/** Problems as one yup error that lists each (toDetails makes each a detail), or true when there are none. */
export function problemsError(ctx: yup.TestContext, problems: readonly Problem[]): yup.ValidationError | true {
  return problems.length ? new yup.ValidationError(problems.map((p) => ctx.createError({ path: p.path, message: asIs(p.message) }))) : true;
}

/** freeFormProblems as a yup test, for an object schema. */
export function freeForm(declared: string[] = []) {
  const skip = new Set(declared);
  return {
    name: 'free-form',
    skipAbsent: true,
    test(this: yup.TestContext, v: object | null | undefined) {
      if (typeof v !== 'object' || v === null) return true;
      return problemsError(this, freeFormProblems(v, this.path, skip));
    },
  };
}

const join = (base: string | undefined, key: string): string => (base ? `${base}.${key}` : key);

/** An object schema that rejects (and names) every key it does not declare. */
export function strictObject<S extends yup.ObjectShape>(shape: S) {
  const known = new Set(Object.keys(shape));
  return yup
    .object(shape)
    .strict()
    .test('known-fields', 'unknown field', function check(value) {
      if (value === null || value === undefined || typeof value !== 'object') return true;
      const extra = Object.keys(value).filter((k) => !known.has(k));
      if (extra.length === 0) return true;
      // No more than toDetails lists: a body of thousands of keys builds no more errors than that.
      return new yup.ValidationError(
        extra.slice(0, MAX_DETAILS).map((k) => this.createError({ path: join(this.path, k), message: asIs(`${join(this.path, k)} is not a known field`) })),
      );
    });
}

/** A map of string keys to values that each pass `value`. */
export function mapOf(value: (key: string) => yup.Schema, keyPattern?: RegExp, keyRule = 'is not a valid key') {
  return yup
    .mixed<Record<string, unknown>>()
    .test('map', 'must be an object', function check(input) {
      if (input === undefined || input === null) return true;
      if (typeof input !== 'object' || Array.isArray(input)) return this.createError({ message: asIs(`${this.path} must be an object`) });
      const errors: yup.ValidationError[] = [];
      for (const [k, v] of Object.entries(input)) {
        if (errors.length >= MAX_DETAILS) break;
        const path = join(this.path, k);
        if (keyPattern && !keyPattern.test(k)) errors.push(this.createError({ path, message: asIs(`${path} ${keyRule}`) }));
        try {
          value(k).validateSync(v, { strict: true, abortEarly: false });
        } catch (err) {
          if (!(err instanceof yup.ValidationError)) throw err;
          for (const inner of err.inner.length ? err.inner : [err]) {
            const sub = inner.path ? `${path}.${inner.path}` : path;
            errors.push(this.createError({ path: sub, message: asIs(inner.message.replace(/^(this|the body)\b/, sub)) }));
          }
        }
      }
      return errors.length ? new yup.ValidationError(errors) : true;
    });
}

/** `text` cut to `max` characters and marked, never splitting a surrogate pair. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const high = text.charCodeAt(max - 1);
  const end = high >= 0xd800 && high <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

/** One detail of a problem found outside yup: `path`, cut as toDetails cuts it, then what is wrong there. */
export function boundedDetail(path: string, says: string): ErrorDetail {
  const shown = clip(path, MAX_PATH_CHARS);
  return { path: shown, message: `${shown} ${says}` };
}

/**
 * yup's errors as CONTRACT's details: one entry per offending path, in the order found, the first
 * MAX_DETAILS. A long path is cut, in the message too (each message starts with its path), so no
 * answer is much larger than the body it refuses.
 */
export function toDetails(err: yup.ValidationError): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of err.inner.length ? err.inner : [err]) {
    const full = e.path || '(root)';
    const path = clip(full, MAX_PATH_CHARS);
    const message = clip(path !== full && e.message.startsWith(full) ? path + e.message.slice(full.length) : e.message, MAX_PATH_CHARS * 2);
    const key = `${path}\u0000${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path, message });
    if (details.length === MAX_DETAILS) break;
  }
  return details;
}

/** Validates without casting; returns the value typed, or the list of problems. */
export function check<T>(schema: yup.Schema<T>, value: unknown, context?: object): { ok: true; value: T } | { ok: false; details: ErrorDetail[] } {
  try {
    return { ok: true, value: schema.validateSync(value, { strict: true, abortEarly: false, context }) as T };
  } catch (err) {
    if (err instanceof yup.ValidationError) return { ok: false, details: toDetails(err) };
    throw err;
  }
}

/**
 * check() for one schema on a hot path: a value the schema's compiled fast path vouches for is
 * returned as is (yup in strict mode returns the very same value); anything else gets yup's full
 * answer, so every error message and path is yup's.
 */
export function compileCheck<T>(schema: yup.Schema<T>): (value: unknown, context?: object) => ReturnType<typeof check<T>> {
  const fast = compileFastAccept(schema);
  // The fast path has no context: a check with one (a fixture's clock) is yup's.
  return (value, context) => (context === undefined && fast(value) ? { ok: true, value: value as T } : check(schema, value, context));
}
