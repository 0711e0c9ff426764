// js-yaml turns an alias into a second reference to its anchor's object, not a copy. So
// `when: &w { not: *w }` loads as an object that contains itself, and anchors that each list the
// one before twice (`&a2 [*a1, *a1]`, `&a3 [*a2, *a2]` …) load as a few lines of text that stand
// for millions of values. The schema check and the compiler walk a document as a tree, so the
// first overflows the stack and the second holds the thread for minutes while memory grows. A
// document is therefore walked once, right after parsing, and refused when it is not a tree of
// bounded size.

/** How many values aliases may repeat in one file, in all: far more than reuse needs, far less than a fan-out. */
const MAX_ALIASED_VALUES = 10_000;
/** How deep a document may nest once its aliases are expanded (js-yaml's own limit for the text is 100). */
const MAX_EXPANDED_DEPTH = 100;

export interface AliasProblem {
  path: string;
  message: string;
}

const childPath = (at: string, key: string, isArray: boolean) => (isArray ? `${at}[${key}]` : at ? `${at}.${key}` : key);

/**
 * The first reason the document cannot be walked as a tree: a value that contains itself (through
 * an alias), more than MAX_ALIASED_VALUES values repeated by aliases, or nesting deeper than
 * MAX_EXPANDED_DEPTH. Paths are spelt as the schema spells them (`rules[0].when.not`). The walk
 * stops at the first problem, so it costs at most the file's own values plus the budget.
 */
export function aliasProblem(doc: unknown): AliasProblem | undefined {
  const seen = new Set<object>();
  // The objects on the path from the root to the value being walked, with their paths.
  const open = new Map<object, string>();
  let repeated = 0;
  let problem: AliasProblem | undefined;

  // `repeatOf`: the path of the alias whose value is being walked again (the outermost), if any.
  const walk = (value: unknown, at: string, depth: number, repeatOf: string | undefined): void => {
    if (repeatOf !== undefined && ++repeated > MAX_ALIASED_VALUES) {
      problem = { path: repeatOf, message: `aliases repeat more than ${MAX_ALIASED_VALUES.toLocaleString('en-US')} values in this file (an alias is expanded wherever it is used): use fewer or smaller aliases` };
      return;
    }
    if (typeof value !== 'object' || value === null) return;
    const cycle = open.get(value);
    if (cycle !== undefined) {
      problem = { path: at, message: `${at} is an alias of ${cycle || 'the whole file'}, which contains it: a value cannot contain itself` };
      return;
    }
    if (depth > MAX_EXPANDED_DEPTH) {
      problem = { path: at, message: `nests deeper than ${MAX_EXPANDED_DEPTH} levels once its aliases are expanded` };
      return;
    }
    const repeat = repeatOf ?? (seen.has(value) ? at : undefined);
    seen.add(value);
    open.set(value, at);
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      walk((value as Record<string, unknown>)[key], childPath(at, key, isArray), depth + 1, repeat);
      if (problem) break;
    }
    open.delete(value);
  };

  walk(doc, '', 0, undefined);
  return problem;
}
