// Reads the browser continuity headers (SPEC 4.3 plus x-svc-continuity) into SessionContext.
// Headers come from the client and can be forged, so each value is shape-checked and bounded:
// a malformed value is dropped, never forwarded to TPS (which would answer 400).

import type { SessionContext } from '../api/types.js';
import { HEADERS } from '../browser/headers.js';
import { MAX_CLOCK_SKEW_MS, parseInstant } from '../validate/timestamp.js';

export type HeaderReader = (name: string) => string | undefined;

const ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client-sent identifier, or undefined when it is not a short plain token. */
export function safeId(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed && ID.test(trimmed) ? trimmed : undefined;
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
    else if (key === 'signal-age') out.signalAge = Math.max(0, number);
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
  // refuse is dropped here rather than turning the request into a 400.
  const at = signal && signal.length <= 64 ? parseInstant(signal) : undefined;
  if (at !== undefined && at - now <= MAX_CLOCK_SKEW_MS) {
    session.recentHumanSignalAt = new Date(at).toISOString();
    // The browser's own age measurement is immune to clock skew between browser and server;
    // fall back to our clock only when it is missing.
    session.recentHumanSignalAgeSeconds = Math.round(continuity.signalAge ?? Math.max(0, (now - at) / 1000));
  }
  return session;
}
