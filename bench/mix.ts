import type { Request } from 'autocannon';

/**
 * The traffic the benchmark sends. Each connection cycles through the sample cases of issue 2, so
 * every decision occurs: allow, allow_redacted (export and PII), step_up_required followed by its
 * satisfied retry on the same connection (which consumes the challenge, as a real caller would),
 * throttle and deny. Actors come from a pool and each connection has step-up transactions of its
 * own, so fingerprints, velocity keys and challenges vary as in production.
 *
 * Bodies are serialized once, before the run: on a small machine the load generator shares the
 * cores with the server, so it must spend as little as possible per request.
 */

const ACTORS = 500;
const actor = (n: number) => `user-${n % ACTORS}`;
const goodSession = (n: number) => ({ sessionId: `sess-${n % ACTORS}`, continuityStrength: 0.9, recentHumanSignalAgeSeconds: 5 });

export interface Case {
  name: string;
  /** The decision the sample configuration gives this case. */
  expect: string;
  /** Also required in the answer, if set. */
  contains?: string;
  body(n: number): object;
}

const stepUpBody = (n: number) => ({
  operationKey: 'bank_account.update',
  actor: { id: actor(n), authenticated: true },
  resource: { type: 'account', id: `acct-${n}` },
  requestData: { fields: ['iban'] },
  session: { sessionId: `sess-${n % ACTORS}`, continuityStrength: 0.9 },
});

export const CASES: Case[] = [
  {
    name: 'allow',
    expect: 'allow',
    body: (n) => ({ operationKey: 'customer.create', actor: { id: actor(n), authenticated: true, role: 'sales' }, resource: { type: 'customer', id: `cust-${n}` }, session: goodSession(n) }),
  },
  {
    name: 'allow_redacted (export)',
    expect: 'allow_redacted',
    body: (n) => ({
      operationKey: 'invoice.export',
      actor: { id: actor(n), authenticated: true, roles: ['finance'] },
      resource: { type: 'invoice', id: `inv-batch-${n % 1000}` },
      metadata: { requestedCount: 5000 },
      session: goodSession(n),
    }),
  },
  { name: 'step_up_required', expect: 'step_up_required', body: stepUpBody },
  {
    name: 'allow (step-up retry)',
    expect: 'allow',
    contains: 'challenge_satisfied',
    body: (n) => ({ ...stepUpBody(n), challengeResult: { type: 'passkey', passed: true } }),
  },
  {
    name: 'throttle',
    expect: 'throttle',
    body: (n) => ({
      operationKey: 'payment_transaction.create',
      actor: { id: actor(n), authenticated: true, role: 'finance' },
      resource: { type: 'payment_method', id: `pm-${n % 2000}` },
      requestData: { amount: 120, currency: 'EUR' },
      metadata: { velocityWindowCount: 25 },
      session: goodSession(n),
    }),
  },
  {
    name: 'deny',
    expect: 'deny',
    body: (n) => ({ operationKey: 'customer.read_pii', actor: { id: actor(n), authenticated: true, role: 'sales' }, resource: { type: 'customer', id: `cust-${n % 5000}` }, session: goodSession(n) }),
  },
  {
    name: 'allow_redacted (PII)',
    expect: 'allow_redacted',
    body: (n) => ({
      operationKey: 'customer.read_pii',
      actor: { id: actor(n), authenticated: true, roles: ['support'] },
      resource: { type: 'customer', id: `cust-${n % 5000}`, classification: 'pii' },
      session: goodSession(n),
    }),
  },
];

/** What a full cycle of CASES decides, by decision: for checking the store's counts afterwards. */
export const EXPECTED_SHARE: Record<string, number> = CASES.reduce<Record<string, number>>((acc, c) => ({ ...acc, [c.expect]: (acc[c.expect] ?? 0) + 1 / CASES.length }), {});

const ROUNDS = 64;

/** The bodies connection `conn` sends, in order, cycling: ROUNDS rounds of every case. */
export function evaluateBodies(conn: number): string[] {
  const out: string[] = [];
  for (let r = 0; r < ROUNDS; r++) for (const c of CASES) out.push(JSON.stringify(c.body(conn * 100_000 + r)));
  return out;
}

export const jsonHeaders = (secretKey: string): Record<string, string> => ({ 'content-type': 'application/json', authorization: `Bearer ${secretKey}` });

/** Connection `conn`'s evaluate traffic as static autocannon requests (built once by autocannon). */
export function evaluateRequests(secretKey: string, conn: number, path = '/api/evaluate'): Request[] {
  const headers = jsonHeaders(secretKey);
  return evaluateBodies(conn).map((body) => ({ method: 'POST', path, headers, body }));
}

/** The same traffic as raw HTTP/1.1 requests, for the paced (open-loop) driver. */
export function rawRequests(host: string, secretKey: string, conn: number, path = '/api/evaluate'): Buffer[] {
  return evaluateBodies(conn).map((body) =>
    Buffer.from(
      `POST ${path} HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\nauthorization: Bearer ${secretKey}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    ),
  );
}

/** SPEC 2.3 records; autocannon puts a fresh id in place of [<id>] in every request, so each is stored. */
export function ingestRequests(secretKey: string, conn: number): Request[] {
  const headers = jsonHeaders(secretKey);
  return Array.from({ length: 16 }, (_, r) => {
    const n = conn * 100_000 + r;
    return {
      method: 'POST',
      path: '/api/events/ingest',
      headers,
      body: JSON.stringify({
        operationKey: 'customer.create',
        actorId: actor(n),
        resourceType: 'customer',
        resourceId: `cust-${n}`,
        telemetryId: 'ing-[<id>]',
        requestSummary: { requestedCount: 1 },
        decision: 'allow',
        score: 12.5,
        reasons: ['low_risk_operation'],
        normalizedSignals: { weak_session_continuity: 0.1, high_sensitivity_operation: 0.3 },
      }),
    };
  });
}
