import coBody from 'co-body';
import { ApiError } from '../api/errors.js';
import { strictUtf8 } from '../lib/utf8.js';
import { parseJsonBody } from '../validate/json.js';
import type { Ctx, Middleware } from './middleware.js';

// A JSON request body, from its bytes to its value: read within the limit, decoded as UTF-8,
// parsed. The JSON routes read it here; evaluate reads its text here and parses it in whichever
// thread evaluates (src/evaluate/body.ts), with parseJsonBody (src/validate/json.ts).

/**
 * The body's text, read within `limit` bytes (after its content-encoding) and decoded as UTF-8,
 * strictly: bytes that are not UTF-8 are invalid_json, never replaced by U+FFFD, which would make
 * different ids one. A leading byte order mark is dropped.
 */
export async function readBodyText(ctx: Ctx, limit: number): Promise<string> {
  const bytes = (await coBody.text(ctx, { limit, encoding: false as unknown as string })) as Buffer;
  const text = strictUtf8(bytes);
  if (text === undefined) throw new ApiError('invalid_json', 'the request body is not valid UTF-8');
  return text;
}

/** The JSON body as ctx.request.body, read as evaluate reads its own (readBodyText, parseJsonBody). */
export const jsonBody = (limit: number): Middleware => async (ctx, next) => {
  ctx.request.body = parseJsonBody(await readBodyText(ctx, limit));
  await next();
};
