// Reads the browser continuity headers (SPEC 4.3 plus x-svc-continuity) into SessionContext, and
// checks the other request values the browser controls (the route id, X-Forwarded-For's IP).
// Each value is shape-checked and bounded as TPS checks it: a value TPS would refuse is dropped
// (or, for the required resource id, made acceptable), never forwarded to answer 400.

import type { SessionContext } from '../api/types.js';
import { HEADERS } from '../browser/headers.js';
import { CONTROL_OR_LONE_SURROGATE, MAX_ID_LENGTH } from '../validate/characters.js';
import { MAX_CLOCK_SKEW_MS, parseInstant } from '../validate/timestamp.js';

export type HeaderReader = (name: string) => string | undefined;

const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client-sent identifier, or undefined when it is not a short plain token. */
export function safeId(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && ID.test(trimmed) ? trimmed : undefined;
}

// TPS's identifier rule, from the module its validators share (kit.ts itself loads yup).
const REFUSED_IN_ID = new RegExp(CONTROL_OR_LONE_SURROGATE.source, 'gu');

/**
 * A default resource id (route param or path) TPS accepts: the value itself when it may, else its
 * first 64 characters (refused ones replaced) plus a SHA-256 of the whole, so ids that differ
 * still differ for step-up and velocity fingerprints, and the Decision Log still shows the start.
 */
export async function resourceId(value: string): Promise<string> {
  const shown = value.replace(REFUSED_IN_ID, '\uFFFD');
  if (shown === value && value !== '' && value.length <= MAX_ID_LENGTH) return value;
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(value)));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  // By code point, so a surrogate pair is never cut in half.
  return `${Array.from(shown).slice(0, 64).join('')}~sha256:${hex}`;
}

// IP-shaped (dotted quad, or hex groups and colons with an optional IPv4 tail), not a full parser:
// TPS wants at most 64 printable characters, and a proxy's X-Forwarded-For can hold anything.
const IP = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?::\d{1,3}(?:\.\d{1,3}){3})?)$/;

/** The client IP, or undefined when it is not one (every match is under TPS's 64-character cap). */
export function safeIp(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && IP.test(trimmed) ? trimmed : undefined;
}

/** Parses `strength=0.85;new-device=0;signal-age=3` (order free, unknown keys ignored). */
export function parseContinuity(value: string | undefined): { strength?: number; newDevice?: boolean; signalAge?: number } {
  const out: { strength?: number; newDevice?: boolean; signalAge?: number } = {};
  for (const part of (value ?? '').slice(0, 256).split(/[;,]/)) {
    const [rawKey, rawValue] = part.split('=');
    const key = rawKey?.trim();
    const number = Number(rawValue?.trim());
    if (rawValue === undefined || rawValue.trim() === '' || !Number.isFinite(number)) continue;
    if (key === 'strength') out.strength = Math.min(1, Math.max(0, number));
    else if (key === 'new-device') out.newDevice = number !== 0;
    // A negative age is malformed, not "just now": dropped, since it now stands without the timestamp.
    else if (key === 'signal-age' && number >= 0) out.signalAge = number;
  }
  return out;
}

export function sessionFromHeaders(header: HeaderReader, now: number = Date.now()): SessionContext {
  const session: SessionContext = {};
  const sessionId = safeId(header(HEADERS.sessionId));
  const tabId = safeId(header(HEADERS.tabId));
  if (sessionId) session.sessionId = sessionId;
  if (tabId) session.tabId = tabId;

  const continuity = parseContinuity(header(HEADERS.continuity));
  if (continuity.strength !== undefined) session.continuityStrength = continuity.strength;
  if (continuity.newDevice !== undefined) session.isNewDevice = continuity.newDevice;

  const signal = header(HEADERS.recentHumanSignal)?.trim();
  // Read as TPS reads it (an offset, a real date, at most the clock skew ahead): a value TPS would
  // refuse is dropped here rather than turning the request into a 400; what it reads, it can write
  // back as ISO that TPS reads. One ahead of our clock is forwarded as now: activity is not in the future.
  const at = signal && signal.length <= 64 ? parseInstant(signal) : undefined;
  if (at !== undefined && at - now <= MAX_CLOCK_SKEW_MS) {
    session.recentHumanSignalAt = new Date(Math.min(at, now)).toISOString();
    session.recentHumanSignalAgeSeconds = Math.round(Math.max(0, (now - at) / 1000));
  }
  // The browser's own age measurement is immune to clock skew, so it wins, and it is kept when the
  // timestamp is dropped (a browser clock more than the skew ahead would otherwise never count).
  if (continuity.signalAge !== undefined) session.recentHumanSignalAgeSeconds = Math.round(continuity.signalAge);
  return session;
}
