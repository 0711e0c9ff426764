import * as yup from 'yup';

/**
 * A fast "is this certainly valid?" for a yup schema, built from the schema itself.
 *
 * yup's validateSync costs ~50 µs for an evaluate request, most of it in its callback-and-error
 * machinery rather than in the checks. This runs the very same checks (each test's own function,
 * with the schema's own type check, optionality, nullability and whitelist) over the value
 * directly, and answers true only when every one of them returned true. Anything else (a failing
 * or erroring test, a promise, a reference, a schema feature it does not know) answers false, and
 * the caller then asks yup, which stays the source of truth for every error message and path.
 * So the fast path can only ever accept what yup accepts.
 */

/** The parts of a yup schema the compiler reads (yup's own fields, as of yup 1.x). */
interface AnySchema {
  type: string;
  spec: { recursive?: boolean };
  conditions: unknown[];
  internalTests: Record<string, Test | undefined>;
  tests: Test[];
  fields?: Record<string, unknown>;
  _nodes?: string[];
  innerType?: unknown;
  _typeCheck(value: unknown): boolean;
}
type Test = { OPTIONS: { name?: string; test: (this: unknown, value: unknown, ctx: unknown) => unknown; skipAbsent?: boolean } };
type Accept = ((value: unknown, parent: unknown, path: string) => boolean) & {
  /** The verdict on an absent (undefined) value, where it does not depend on where the value sits. */
  absent?: boolean;
};

/** Thrown inside a test's context to say "not the fast path's business": yup decides. */
const BAIL = Symbol('bail');
const bail = () => {
  throw BAIL;
};
const OPTIONS = Object.freeze({});

/** Compiles `schema` to a predicate; throws if the schema uses a feature the fast path cannot run. */
export function compileFastAccept(schema: yup.Schema): (value: unknown) => boolean {
  const accept = compile(schema as unknown as AnySchema);
  return (value) => {
    try {
      return accept(value, undefined, '');
    } catch {
      // BAIL, or a test that threw: either way yup runs and reports (or rethrows) it.
      return false;
    }
  };
}

function compile(schema: AnySchema): Accept {
  if (!yup.isSchema(schema as unknown) || !Array.isArray(schema.conditions) || schema.conditions.length > 0 || typeof schema._typeCheck !== 'function') {
    throw new Error('compileFastAccept: only plain yup schemas (no when(), lazy() or refs) are supported');
  }
  // The same tests yup runs, in the same two groups: internal ones first, then the schema's own.
  const tests = [...Object.values(schema.internalTests).filter((t): t is Test => t !== undefined), ...schema.tests].map((t) => t.OPTIONS);
  const recursive = schema.spec.recursive !== false;
  let children: ((value: object, path: string) => boolean) | undefined;

  if (schema.type === 'object' && recursive && schema.fields) {
    const fields = (schema._nodes ?? Object.keys(schema.fields)).map((key) => {
      const field = schema.fields![key];
      if (!yup.isSchema(field)) throw new Error(`compileFastAccept: field ${key} is not a plain schema`);
      return { key, accept: compile(field as unknown as AnySchema), dotted: key.includes('.') };
    });
    children = (value, path) => {
      for (const f of fields) {
        const v = (value as Record<string, unknown>)[f.key];
        // Most declared fields are absent from a request: those settle without a path or a context.
        if (v === undefined && f.accept.absent !== undefined) {
          if (!f.accept.absent) return false;
          continue;
        }
        const childPath = f.dotted ? `${path}["${f.key}"]` : path ? `${path}.${f.key}` : f.key;
        if (!f.accept(v, value, childPath)) return false;
      }
      return true;
    };
  } else if (schema.type === 'array' && recursive && schema.innerType) {
    const inner = compile(schema.innerType as unknown as AnySchema);
    children = (value, path) => {
      const items = value as unknown[];
      for (let i = 0; i < items.length; i++) if (!inner(items[i], items, `${path}[${i}]`)) return false;
      return true;
    };
  } else if (schema.type === 'object' || schema.type === 'array' || schema.type === 'tuple') {
    throw new Error(`compileFastAccept: ${schema.type} schema without fields`);
  }

  // One context per schema node, refilled on each visit: validation is synchronous and a node is
  // never visited inside its own visit, so no test can see another's values.
  const ctx = { path: '', parent: undefined as unknown, schema, options: OPTIONS, originalValue: undefined as unknown, from: undefined, type: undefined as string | undefined, createError: bail, resolve: resolveItem };
  const run = (value: unknown, parent: unknown, path: string): boolean => {
    ctx.path = path;
    ctx.parent = parent;
    ctx.originalValue = value;
    for (const t of tests) {
      if (t.skipAbsent && (value === null || value === undefined)) continue;
      ctx.type = t.name;
      if (t.test.call(ctx, value, ctx) !== true) return false;
    }
    return true;
  };
  const accept: Accept = (value, parent, path) => {
    if (!run(value, parent, path)) return false;
    if (!children || value === null || typeof value !== 'object') return true;
    // yup checks children only when the value passed its type check: so does this.
    return schema._typeCheck(value) ? children(value, path) : false;
  };
  // yup's internal tests read only the value and the schema, and skipAbsent tests skip undefined:
  // when no test of the schema's own runs on undefined, an absent value's verdict is fixed.
  if (!schema.tests.some((t) => !t.OPTIONS.skipAbsent)) {
    try {
      accept.absent = run(undefined, undefined, '');
    } catch {
      accept.absent = false;
    }
  }
  return accept;
}

/** `this.resolve` of a test: plain values pass through; references are yup's job. */
function resolveItem(item: unknown): unknown {
  if (item && typeof item === 'object' && (item as { __isYupRef?: boolean }).__isYupRef) bail();
  return item;
}
