// The one reading of a caller's timestamp: session.recentHumanSignalAt, the Decision Log's from/to
// and a fixture's `at`. Date.parse alone reads an offset-less time in the server's zone and rolls
// 2025-02-30 over to March, so the fields are checked here and the instant is computed from them.

/** How far ahead of TPS's clock a caller's "when" may be: clocks drift, the future does not happen yet. */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

export const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|([+-])(\d{2}):?(\d{2})))?$/;
const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysIn = (year: number, month: number) => (month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : DAYS[month - 1]!);

// The instants whose UTC form has a four-digit year: 0000-01-01T00:00+01:00 is one hour before the
// first, and toISOString would write it -000001-12-31T23:00:00.000Z, which this reader refuses.
const FIRST_INSTANT = new Date('0000-01-01T00:00:00Z').getTime();
const LAST_INSTANT = new Date('9999-12-31T23:59:59.999Z').getTime();

/**
 * Milliseconds since the epoch of an ISO 8601 date-time with an offset (Z, ±hh:mm or ±hhmm), or,
 * with `allowDate`, of a plain date (UTC midnight). undefined for anything else, dates and times
 * that do not exist (2025-02-30, 24:00, 12:60) included, and instants whose own UTC form it could
 * not read back (a year before 0000 or after 9999 once the offset is applied).
 */
export function parseInstant(text: string, options: { allowDate?: boolean } = {}): number | undefined {
  const m = ISO_8601.exec(text);
  if (!m) return undefined;
  if (m[4] === undefined && !options.allowDate) return undefined;
  // A plain date is midnight: absent time parts are 0.
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((s) => Number(s ?? 0)) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined;
  const offsetHours = Number(m[9] ?? 0);
  const offsetMinutes = Number(m[10] ?? 0);
  if (offsetHours > 23 || offsetMinutes > 59) return undefined;
  const offset = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes);
  // setUTCFullYear, not Date.UTC, which reads years 0–99 as 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const millis = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0').slice(0, 3));
  const instant = date.getTime() + ((hour * 60 + minute - offset) * 60 + second) * 1000 + millis;
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT ? instant : undefined;
}

// A query string decodes `+` as a space (URLSearchParams, application/x-www-form-urlencoded), so
// `from=2025-03-01T10:30:00+01:00` typed into a URL as written arrives with a space before the offset.
// ISO 8601 has no space there: in that one place it can only be a decoded `+`. Anywhere else it stays refused.
const DECODED_PLUS = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?) (\d{2}:?\d{2})$/;

/** A query parameter's date-time with the `+` of its offset restored; any other text unchanged. */
export const offsetPlusRestored = (text: string): string => text.replace(DECODED_PLUS, '$1+$2');

// parseInstant keeps whole milliseconds; the digits past them (…00.1235Z) are the rest, in nanoseconds.
const subMillis = (text: string): number => Number((/\.\d{3}(\d{1,6})/.exec(text)?.[1] ?? '').padEnd(6, '0'));

/**
 * A window's bound (a date or a date-time parseInstant reads with allowDate) in whole milliseconds,
 * as an event's createdAt is: one with a part of a millisecond rounds up, so a `from`/`--since`
 * (inclusive) and a `to`/`--until` (exclusive) keep and drop exactly the events they would at full
 * precision. undefined for what parseInstant refuses.
 */
export function boundMs(text: string): number | undefined {
  const ms = parseInstant(text, { allowDate: true });
  return ms === undefined ? undefined : ms + (subMillis(text) > 0 ? 1 : 0);
}

/** Whether bound `to` is later than bound `from`, at their full precision (both readable by boundMs). */
export function laterBound(to: string, from: string): boolean {
  const [t, f] = [parseInstant(to, { allowDate: true })!, parseInstant(from, { allowDate: true })!];
  return t !== f ? t > f : subMillis(to) > subMillis(from);
}
