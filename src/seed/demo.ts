import type { EvaluateRequest } from '../api/types.js';
import { OfflineEvaluator } from '../evaluate/offline.js';
import type { Catalog } from '../policy/catalog.js';
import { MemoryChallengeStore } from '../state/challenges.js';
import { MemoryVelocityCounter } from '../state/counters.js';
import type { EventRecord } from '../store/eventStore.js';

// A realistic demo history: a week of traffic over the sample operations, every decision among
// it, step-up retries that pass or fail, a payment burst that TPS itself throttles. Each event is
// a real evaluation through the server's Evaluator (offline), so it is explained and replayable.
// The same count and environment always give the same history: a seeded PRNG drives the
// requests, the clock is simulated, and telemetryIds are demo-000001, demo-000002, …

export const DEMO_PREFIX = 'demo-';
const DAY = 86_400_000;

/** mulberry32: small, fast, seeded; plenty for demo data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rng = () => number;
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const between = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));
const chance = (rng: Rng, p: number) => rng() < p;

interface Shape {
  req: Omit<EvaluateRequest, 'operationKey'>;
}

function session(rng: Rng, actor: string, risky: boolean): EvaluateRequest['session'] {
  const s: NonNullable<EvaluateRequest['session']> = { sessionId: `sess-${actor}-${between(rng, 1, 40)}`, tabId: `tab-${between(rng, 1, 9)}` };
  if (risky) {
    s.continuityStrength = Math.round(rng() * 40) / 100;
    if (chance(rng, 0.7)) s.isNewDevice = true;
    if (chance(rng, 0.5)) s.geoChanged = true;
    if (chance(rng, 0.5)) s.networkChanged = true;
  } else {
    s.continuityStrength = Math.round(80 + rng() * 20) / 100;
    s.recentHumanSignalAgeSeconds = between(rng, 1, 90);
  }
  return s;
}

const actorOf = (rng: Rng, role: string, n = 12) => `${DEMO_PREFIX}${role}-${between(rng, 1, n)}`;

/** One request of the operation, drawn from a mix of ordinary and risky traffic. */
function shapeFor(rng: Rng, operation: string): Shape {
  const risky = chance(rng, 0.14);
  const takeover = risky && chance(rng, 0.25);
  const hour = between(rng, 0, 23);
  const base = (role: string, roles: string[]) => {
    const id = actorOf(rng, role);
    return { id, actor: { id, authenticated: takeover ? false : true, roles } };
  };
  const extra = (m: Record<string, unknown> = {}) => ({ localHour: hour, ...(takeover ? { abnormalSequence: true } : {}), ...m });
  switch (operation) {
    case 'customer.create': {
      const a = base('staff', ['staff']);
      return { req: { actor: a.actor, resource: { type: 'customer', id: `cus-${between(rng, 1000, 9999)}` }, session: session(rng, a.id, risky), metadata: extra() } };
    }
    case 'bank_account.update': {
      const a = base('customer', ['customer']);
      const s = session(rng, a.id, risky);
      // Some people leave the tab and come back to it: a stale human signal asks for a passkey.
      if (!risky && chance(rng, 0.25)) s!.recentHumanSignalAgeSeconds = between(rng, 150, 900);
      return {
        req: {
          actor: a.actor,
          resource: { type: 'account', id: `acct-${a.id}`, ownerId: a.id },
          session: s,
          metadata: extra({ changedFields: chance(rng, 0.5) ? ['iban'] : ['iban', 'accountHolder'] }),
        },
      };
    }
    case 'invoice.export': {
      const role = chance(rng, 0.07) ? 'support' : chance(rng, 0.2) ? 'admin' : 'finance';
      const a = base(role, [role]);
      const r = rng();
      const requestedCount = r < 0.02 ? between(rng, 50_001, 120_000) : r < 0.3 ? between(rng, 1000, 20_000) : between(rng, 1, 900);
      return { req: { actor: a.actor, resource: { type: 'invoice', id: `batch-${between(rng, 1, 500)}` }, requestData: { requestedCount }, session: session(rng, a.id, risky), metadata: extra({ resourceCount: requestedCount }) } };
    }
    case 'payment_transaction.create': {
      const role = chance(rng, 0.05) ? 'support' : 'finance';
      const a = base(role, [role]);
      // Log-uniform amounts, 10 to 50 000: mostly small, now and then large.
      const amount = Math.round(Math.exp(Math.log(10) + rng() * (Math.log(50_000) - Math.log(10))) * 100) / 100;
      const velocityWindowCount = chance(rng, 0.06) ? between(rng, 21, 60) : between(rng, 0, 12);
      return {
        req: {
          actor: a.actor,
          resource: { type: 'payment_method', id: `pm-${between(rng, 1, 300)}` },
          requestData: { amount, currency: pick(rng, ['EUR', 'USD', 'GBP']) },
          session: session(rng, a.id, risky),
          metadata: extra({ velocityWindowCount }),
        },
      };
    }
    case 'customer.read_pii': {
      const role = chance(rng, 0.06) ? 'finance' : chance(rng, 0.25) ? 'admin' : 'support';
      const a = base(role, [role]);
      const requestedCount = chance(rng, 0.08) ? between(rng, 101, 2000) : between(rng, 1, 20);
      return {
        req: {
          actor: a.actor,
          resource: { type: 'customer', id: `cus-${between(rng, 1000, 9999)}`, classification: 'PII' },
          requestData: { requestedCount, fields: ['customer.email', 'customer.phone'] },
          session: session(rng, a.id, risky),
          metadata: extra(),
        },
      };
    }
    default: {
      const a = base('user', ['user']);
      return { req: { actor: a.actor, resource: { type: 'thing', id: `id-${between(rng, 1, 999)}` }, session: session(rng, a.id, risky), metadata: extra() } };
    }
  }
}

export interface DemoOptions {
  catalog: Catalog;
  environment: string;
  /** How many events (default 3000). */
  count?: number;
  seed?: number;
  /** The history ends at this time (default: the start of the current hour) and spans 7 days. */
  endMs?: number;
  /** Receives the events in batches as they are made, oldest first. */
  write(events: EventRecord[]): Promise<void>;
}

/** Generates the demo history; returns how many events were made, by decision. */
export async function generateDemoHistory(o: DemoOptions): Promise<{ total: number; byDecision: Record<string, number> }> {
  const count = o.count ?? 3000;
  const rng = prng(o.seed ?? 5);
  // Aligned to the hour so the velocity windows (and so every decision) are the same on every run.
  const end = o.endMs ?? Math.floor(Date.now() / 3_600_000) * 3_600_000;
  let now = end - 7 * DAY;
  const gap = (7 * DAY) / count;
  const operations = [...o.catalog.operations.values()].filter((op) => !op.environments || op.environments.has(o.environment)).map((op) => op.key).sort();
  if (operations.length === 0) throw new Error(`no operation is configured for environment "${o.environment}"`);

  let n = 0;
  const byDecision: Record<string, number> = {};
  let batch: EventRecord[] = [];
  const offline = new OfflineEvaluator({
    catalog: o.catalog,
    counters: new MemoryVelocityCounter(),
    challenges: new MemoryChallengeStore(),
    now: () => now,
    record: async (event) => {
      n += 1;
      byDecision[event.decision] = (byDecision[event.decision] ?? 0) + 1;
      batch.push({ ...event, telemetryId: `${DEMO_PREFIX}${String(n).padStart(6, '0')}` });
      if (batch.length >= 500) {
        await o.write(batch);
        batch = [];
      }
    },
  });
  const evaluate = (req: EvaluateRequest) => offline.evaluate(req, o.environment);

  while (n < count) {
    now += Math.max(1, Math.round(-Math.log(1 - rng()) * gap));
    const operation = pick(rng, operations);
    if (operation === 'payment_transaction.create' && chance(rng, 0.01) && count - n > 40) {
      // A script pays 35 times in 35 seconds: TPS's own window (30 a minute) throttles the tail.
      const { req } = shapeFor(rng, operation);
      for (let i = 0; i < 35 && n < count; i++) {
        now += 1000;
        await evaluate({ ...req, operationKey: operation, requestData: { ...req.requestData, amount: between(rng, 20, 400) } });
      }
      continue;
    }
    const { req } = shapeFor(rng, operation);
    const request: EvaluateRequest = { ...req, operationKey: operation };
    const { response } = await evaluate(request);
    if (response.decision === 'step_up_required' && n < count) {
      const r = rng();
      if (r < 0.7) {
        now += between(rng, 5, 60) * 1000;
        const passed = r < 0.62;
        const metadata = response.challenge?.type === 'proof_token' ? { ...request.metadata, proofToken: `demo-proof-${n}` } : request.metadata;
        await evaluate({ ...request, metadata, challengeResult: { type: response.challenge?.type, passed } });
      }
    }
  }
  if (batch.length) await o.write(batch);
  return { total: n, byDecision };
}
