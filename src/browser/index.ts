// TPS browser continuity client. It gathers continuity context (session, tab, device, human
// activity) and returns headers for the app's own backend, which forwards them to TPS through
// the decision middleware. It never talks to TPS and never holds a secret key.

import type { SessionContext } from '../api/types.js';
import { continuityStrength } from './continuity.js';
import { HEADERS } from './headers.js';
import { captureSignals } from './signals.js';
import { isId, randomId, read, readCookie, write, writeSessionCookie } from './storage.js';
import { currentTab } from './tab.js';

export { HEADERS } from './headers.js';
export { continuityStrength, humanRecency, type ContinuityFactors } from './continuity.js';

export interface BrowserClientOptions {
  /** The environment's publishable key, svc_pub_…. */
  publishableKey: string;
  /** Record timestamps of trusted pointer, keyboard and touch events. Default true. */
  captureHumanSignals?: boolean;
}

export interface PrepareInput {
  operationKey: string;
  resource: { type: string; id: string };
  /** Client-safe values only (validated, not sent: the backend owns the transaction). */
  metadata?: Record<string, string | number | boolean | null>;
}

export type BrowserSession = Required<Pick<SessionContext, 'sessionId' | 'tabId' | 'isNewDevice' | 'continuityStrength'>> &
  Pick<SessionContext, 'recentHumanSignalAt'>;

export interface Prepared {
  session: BrowserSession;
  /** Add these to the request to your backend. */
  headers: Record<string, string>;
}

export interface BrowserClient {
  /** Call right before each protected request: the values describe this moment. */
  prepare(input: PrepareInput): Prepared;
}

/** A session cookie lasts exactly the browser session and is shared by its tabs. */
const SESSION_COOKIE = 'svc_sid';
/** Fallback when cookies are disabled: then the session is per tab. */
const SESSION_KEY = 'svc:sid';

let session: { id: string; continued: boolean } | undefined;
let preparedBefore = false;

function currentSession(): { id: string; continued: boolean } {
  if (session) return session;
  const existing = readCookie(SESSION_COOKIE) ?? read('sessionStorage', SESSION_KEY);
  if (isId(existing)) return (session = { id: existing, continued: true });
  const id = randomId();
  if (!writeSessionCookie(SESSION_COOKIE, id)) write('sessionStorage', SESSION_KEY, id);
  return (session = { id, continued: false });
}

/** A device is known once it is seen in a second browser session for this publishable key. */
function knownDevice(publishableKey: string, sessionId: string): boolean {
  const key = `svc:dev:${publishableKey}`;
  const firstSession = read('localStorage', key);
  if (firstSession === null) {
    write('localStorage', key, sessionId);
    return false;
  }
  return firstSession !== sessionId;
}

function requireString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw new TypeError(`TPS: prepare needs ${name} as a non-empty string`);
  return value;
}

export function createBrowserClient(options: BrowserClientOptions): BrowserClient {
  const key = options?.publishableKey;
  if (typeof key === 'string' && key.startsWith('svc_sec_')) {
    throw new Error('TPS: a secret key (svc_sec_…) must never be shipped to a browser. Use the publishable key (svc_pub_…) here and keep the secret key on your server.');
  }
  if (typeof key !== 'string' || !key.startsWith('svc_pub_')) throw new TypeError('TPS: createBrowserClient needs publishableKey, a key starting with svc_pub_');
  const capture = options.captureHumanSignals !== false;
  const tab = currentTab();
  if (capture) captureSignals(tab);

  return {
    prepare(input) {
      const operationKey = requireString(input?.operationKey, 'operationKey');
      requireString(input.resource?.type, 'resource.type');
      requireString(input.resource?.id, 'resource.id');
      for (const value of Object.values(input.metadata ?? {})) {
        if (value !== null && typeof value === 'object') throw new TypeError('TPS: prepare metadata holds only strings, numbers, booleans or null');
      }
      const s = currentSession();
      const known = knownDevice(key, s.id);
      const last = capture ? tab.lastSignal : undefined;
      const age = last === undefined ? undefined : Math.max(0, (Date.now() - last) / 1000);
      const strength = continuityStrength({
        sameSession: s.continued || preparedBefore,
        sameTab: tab.continued || preparedBefore,
        knownDevice: known,
        signalAgeSeconds: age,
      });
      preparedBefore = true;

      const result: Prepared = {
        session: { sessionId: s.id, tabId: tab.id, isNewDevice: !known, continuityStrength: strength },
        headers: {
          [HEADERS.sessionId]: s.id,
          [HEADERS.tabId]: tab.id,
          [HEADERS.operationKey]: operationKey,
          [HEADERS.continuity]: `strength=${strength};new-device=${known ? 0 : 1}${age === undefined ? '' : `;signal-age=${Math.round(age)}`}`,
        },
      };
      if (last !== undefined) {
        result.session.recentHumanSignalAt = new Date(last).toISOString();
        result.headers[HEADERS.recentHumanSignal] = result.session.recentHumanSignalAt;
      }
      return result;
    },
  };
}

/** Headers for the retry after a step-up: the challenge id and the proof the backend verifies. */
export function proofHeaders(challengeId: string, proof: { proofToken?: string; passkeyAssertion?: string }): Record<string, string> {
  const headers: Record<string, string> = { [HEADERS.challengeId]: challengeId };
  if (proof.passkeyAssertion) headers[HEADERS.passkeyAssertion] = proof.passkeyAssertion;
  if (proof.proofToken) headers[HEADERS.proofToken] = proof.proofToken;
  return headers;
}
