// Redacts what Koa is about to send for an allow_redacted decision. Koa sends an object as JSON and a
// string or Buffer as it is; a JSON string or Buffer is parsed and redacted too. A body the
// middleware cannot read (a stream, a Blob, a fetch Response, text that is not JSON, or
// ctx.respond = false, where the app writes the response itself) cannot be checked, so it is refused.

import type { Context } from 'koa';

export type Redact = (data: unknown) => unknown;

const isBytes = (body: unknown): body is Uint8Array => body instanceof Uint8Array;

/** JSON text's value, or `unreadable` when the text is not JSON. Blank text carries nothing. */
function parseJson(text: string): { value: unknown } | 'blank' | 'unreadable' {
  if (text.trim() === '') return 'blank';
  try {
    return { value: JSON.parse(text) };
  } catch {
    return 'unreadable';
  }
}

/**
 * Replaces ctx.body with its redacted form. Returns a description of the body when it cannot be
 * redacted (the caller then refuses to send it), or undefined when done.
 */
export function redactKoaBody(ctx: Context, redact: Redact): string | undefined {
  if (ctx.respond === false) return 'ctx.respond = false (the app writes the response itself)';
  // A redirect (ctx.redirect() sets a line of text or HTML naming the target), 204 and 304 carry no
  // data to redact: their body is a note or is never sent.
  if ((ctx.status >= 300 && ctx.status < 400) || ctx.status === 204) return undefined;
  const body: unknown = ctx.body;
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string' || isBytes(body)) {
    const bytes = typeof body !== 'string';
    const parsed = parseJson(bytes ? Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8') : body);
    if (parsed === 'blank') return undefined;
    if (parsed === 'unreadable') return bytes ? 'a Buffer that is not JSON' : 'a string that is not JSON';
    // Koa keeps the content type already set when the body is replaced.
    const text = JSON.stringify(redact(parsed.value));
    ctx.body = bytes ? Buffer.from(text) : text;
    return undefined;
  }
  if (typeof body !== 'object') return undefined; // a number or boolean: nothing to redact
  if (typeof (body as { pipe?: unknown }).pipe === 'function' || typeof (body as { getReader?: unknown }).getReader === 'function') return 'a stream';
  if (body instanceof Blob || body instanceof Response) return `a ${body.constructor.name}`;
  ctx.body = redact(body);
  return undefined;
}
