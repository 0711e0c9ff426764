// Storage that never throws: sessionStorage, localStorage and document.cookie can each be
// disabled or throw (privacy modes, sandboxed iframes), and continuity must degrade, not break.

type Area = 'sessionStorage' | 'localStorage';

export function read(area: Area, key: string): string | null {
  try {
    return window[area].getItem(key);
  } catch {
    return null;
  }
}

export function write(area: Area, key: string, value: string | null): boolean {
  try {
    if (value === null) window[area].removeItem(key);
    else window[area].setItem(key, value);
    return true;
  } catch {
    return false;
  }
}

export function readCookie(name: string): string | null {
  try {
    const hit = document.cookie.split('; ').find((c) => c.startsWith(`${name}=`));
    return hit ? hit.slice(name.length + 1) : null;
  } catch {
    return null;
  }
}

/** Writes a session cookie (no expiry: it ends with the browser session). True if it stuck. */
export function writeSessionCookie(name: string, value: string): boolean {
  try {
    document.cookie = `${name}=${value}; path=/; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`;
  } catch {
    return false;
  }
  return readCookie(name) === value;
}

/** The shape of randomId(): what a session or tab id read back from storage must have. */
export const isId = (value: unknown): value is string => typeof value === 'string' && /^[0-9a-f]{32}$/.test(value);

/** 128 random bits as hex. getRandomValues, unlike randomUUID, also works on plain http pages. */
export function randomId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}
