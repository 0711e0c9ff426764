import * as yup from 'yup';
import type { ErrorDetail } from '../api/types.js';
import { compileFastAccept } from './fastAccept.js';

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
      return new yup.ValidationError(
        extra.map((k) => this.createError({ path: join(this.path, k), message: `${join(this.path, k)} is not a known field` })),
      );
    });
}

/** A map of string keys to values that each pass `value`. */
export function mapOf(value: (key: string) => yup.Schema, keyPattern?: RegExp, keyRule = 'is not a valid key') {
  return yup
    .mixed<Record<string, unknown>>()
    .test('map', 'must be an object', function check(input) {
      if (input === undefined || input === null) return true;
      if (typeof input !== 'object' || Array.isArray(input)) return this.createError({ message: `${this.path} must be an object` });
      const errors: yup.ValidationError[] = [];
      for (const [k, v] of Object.entries(input)) {
        const path = join(this.path, k);
        if (keyPattern && !keyPattern.test(k)) errors.push(this.createError({ path, message: `${path} ${keyRule}` }));
        try {
          value(k).validateSync(v, { strict: true, abortEarly: false });
        } catch (err) {
          if (!(err instanceof yup.ValidationError)) throw err;
          for (const inner of err.inner.length ? err.inner : [err]) {
            const sub = inner.path ? `${path}.${inner.path}` : path;
            errors.push(this.createError({ path: sub, message: inner.message.replace(/^(this|the body)\b/, sub) }));
          }
        }
      }
      return errors.length ? new yup.ValidationError(errors) : true;
    });
}

/** yup's errors as CONTRACT's details: one entry per offending path, in the order found. */
export function toDetails(err: yup.ValidationError): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  for (const e of err.inner.length ? err.inner : [err]) {
    const path = e.path || '(root)';
    const key = `${path}\u0000${e.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    details.push({ path, message: e.message });
  }
  return details;
}

/** Validates without casting; returns the value typed, or the list of problems. */
export function check<T>(schema: yup.Schema<T>, value: unknown): { ok: true; value: T } | { ok: false; details: ErrorDetail[] } {
  try {
    return { ok: true, value: schema.validateSync(value, { strict: true, abortEarly: false }) as T };
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
export function compileCheck<T>(schema: yup.Schema<T>): (value: unknown) => ReturnType<typeof check<T>> {
  const fast = compileFastAccept(schema);
  return (value) => (fast(value) ? { ok: true, value: value as T } : check(schema, value));
}
