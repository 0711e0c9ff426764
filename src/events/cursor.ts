// A cursor names a position in an environment's event sequence (the store's seq). It is opaque to
// callers: a version tag keeps room to change what it holds without breaking saved cursors.
const PREFIX = 'e1.';

export function encodeCursor(seq: number): string {
  return Buffer.from(`${PREFIX}${seq}`).toString('base64url');
}

/** The seq a cursor names, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): number | undefined {
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(cursor)) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!text.startsWith(PREFIX)) return undefined;
  const digits = text.slice(PREFIX.length);
  if (!/^(0|[1-9]\d{0,15})$/.test(digits)) return undefined;
  const seq = Number(digits);
  return Number.isSafeInteger(seq) ? seq : undefined;
}
