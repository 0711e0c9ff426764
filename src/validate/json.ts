import bourne from '@hapi/bourne';
import { ApiError, invalidJson } from '../api/errors.js';
import type { ErrorDetail } from '../api/types.js';
import { boundedDetail, MAX_DETAILS, MAX_PATH_CHARS } from './kit.js';

// A JSON request body's text to its value, for every JSON route (src/http/body.ts) and for the
// evaluation thread (src/evaluate/body.ts), which loads no body reader (co-body) for it.

// Strict JSON: an object or an array, an empty body read as {}.
const STRICT_JSON = /^[\x20\x09\x0a\x0d]*[[{]/;
// What bourne throws for a well-formed document that holds a `__proto__` key.
const FORBIDDEN_PROTO = 'Object contains forbidden prototype property';

/**
 * The body as JSON (strict: an object or an array; an empty body read as {}), or invalid_json. A key
 * named `__proto__` is refused (it would set an object's prototype wherever the value is copied),
 * as invalid_request naming where it is: the body is valid JSON.
 */
export function parseJsonBody(text: string): unknown {
  if (!text) return {};
  try {
    if (!STRICT_JSON.test(text)) throw new SyntaxError('not an object or an array');
    return bourne.parse(text, { protoAction: 'error' });
  } catch (err) {
    if (err instanceof SyntaxError && err.message === FORBIDDEN_PROTO) throw protoKeys(JSON.parse(text) as object);
    throw invalidJson();
  }
}

/** Where `root` (JSON.parse's, where `__proto__` is an own key) holds `__proto__` keys, as invalid_request. */
function protoKeys(root: object): ApiError {
  const details: ErrorDetail[] = [];
  // Breadth first with a queue of its own, so no nesting overflows the stack. Each entry carries
  // its path from the root, spelt only up to the cut a detail shows (MAX_PATH_CHARS): past it a
  // path is not lengthened, so deep nesting costs no more than that per value.
  const queue: { value: object; path: string }[] = [{ value: root, path: '' }];
  for (let i = 0; i < queue.length && details.length < MAX_DETAILS; i++) {
    const { value, path } = queue[i]!;
    const isArray = Array.isArray(value);
    for (const key of Object.keys(value)) {
      const at = path.length > MAX_PATH_CHARS ? path : isArray ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (!isArray && key === '__proto__') details.push(boundedDetail(at, 'is a key named __proto__, which is not accepted'));
      const child = (value as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) queue.push({ value: child, path: at });
    }
  }
  return new ApiError('invalid_request', 'the request body has a key named __proto__', details.slice(0, MAX_DETAILS));
}
