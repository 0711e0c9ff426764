import { isUtf8 } from 'node:buffer';

// Text is read as UTF-8, strictly, wherever it comes from (a request body, a configuration file).
// Decoded leniently, bytes that are not UTF-8 become U+FFFD: a Latin-1 `CAFÉ` and `CAFÈ` would be
// one id, and a Latin-1 `zürich` a role no actor has.

/** The bytes as text, a leading byte order mark dropped; undefined when they are not UTF-8. */
export function strictUtf8(bytes: Buffer): string | undefined {
  if (!isUtf8(bytes)) return undefined;
  const text = bytes.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Where bytes that are not UTF-8 stop being it: `byte` counts from 1 (as `cmp` does), `line` too. */
export function notUtf8At(bytes: Buffer): { byte: number; line: number } {
  // Valid UTF-8 survives a decode and re-encode byte for byte, so the first byte that differs is
  // where the invalid sequence starts (or the byte after a lead byte that was cut short).
  const again = Buffer.from(bytes.toString('utf8'), 'utf8');
  let i = 0;
  while (i < bytes.length && bytes[i] === again[i]) i++;
  let line = 1;
  for (let j = 0; j < i; j++) if (bytes[j] === 0x0a) line++;
  return { byte: i + 1, line };
}
