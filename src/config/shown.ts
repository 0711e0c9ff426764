// What a configuration error may show of a variable's value: the value helps find the typo, but a
// variable that may carry a secret (a key, a URL with a password in it) must not put it in a log.

/** Variables whose values may hold a secret: keys, tokens, passwords, and URLs (user:password@). */
const holdsSecret = (name: string): boolean => /(?:URL|KEY|SECRET|TOKEN|PASSWORD)$/.test(name);

/**
 * A URL as it may be shown: user name and password as ***, query and fragment left out; undefined
 * when it is no URL with a host (a key pasted by mistake, "sk-live:…", parses as an opaque URL).
 */
function redactedUrl(raw: string): string | undefined {
  if (!URL.canParse(raw.trim())) return undefined;
  const url = new URL(raw.trim());
  if (!url.host) return undefined;
  if (url.username) url.username = '***';
  if (url.password) url.password = '***';
  const cut = url.search || url.hash ? '?…' : '';
  url.search = '';
  url.hash = '';
  return url.href + cut;
}

/** `, got "…"` for an error about the variable's value, or nothing when the value is not to be shown. */
export function gotValue(name: string, raw: string): string {
  if (!holdsSecret(name)) return `, got "${raw}"`;
  const url = redactedUrl(raw);
  return url === undefined ? '' : `, got "${url}"`;
}
