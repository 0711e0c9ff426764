import crypto from 'node:crypto';
import type { ExecutionContext } from 'ava';
import { createKeyPair } from '../../src/auth/keys.js';
import type { DecisionEvent, IngestRecord } from '../../src/api/types.js';
import { CURSOR_SECRET, CursorCodec } from '../../src/events/cursor.js';
import { RetentionPruner } from '../../src/events/retention.js';
import { parseSse } from '../../src/events/sseParser.js';
import type { EventFilter } from '../../src/store/eventFilter.js';
import type { EventRecord, KnexEventStore } from '../../src/store/eventStore.js';
import { serviceSecret } from '../../src/store/serviceSecrets.js';
import { freshDatabase, get, post, startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';

export const uid = (prefix = 't'): string => `${prefix}_${crypto.randomBytes(6).toString('hex')}`;

/** A fresh environment with its own key pair on the same store: tests that share a server stay apart. */
export async function newEnvironment(tps: RunningTps): Promise<{ environment: string; secretKey: string }> {
  const pair = await createKeyPair(tps.tps.keyStore, uid('env'));
  return { environment: pair.environment, secretKey: pair.secretKey };
}

/** The cursors a running server issues and accepts: under the secret its store keeps. */
export async function serverCursors(tps: RunningTps): Promise<CursorCodec> {
  return new CursorCodec(await serviceSecret(tps.tps.db.knex, CURSOR_SECRET));
}

export function ingestRecord(overrides: Partial<IngestRecord> = {}): IngestRecord {
  return {
    operationKey: 'invoice.export',
    actorId: 'user_7',
    resourceType: 'invoice',
    resourceId: 'inv_1',
    telemetryId: uid('tel'),
    requestSummary: { requestedCount: 3, changedFields: ['amount'] },
    decision: 'deny',
    score: 72.5,
    reasons: ['bulk_or_export_volume', 'high_sensitivity_operation'],
    normalizedSignals: { bulk_or_export_volume: 0.8, high_sensitivity_operation: 0.7 },
    ...overrides,
  };
}

const OPERATIONS = ['customer.create', 'invoice.export', 'bank_account.update', 'customer.read_pii'];
const RESOURCE_TYPES = ['customer', 'invoice', 'account'];
const DECISIONS = ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny'] as const;
const BANDS = ['low', 'medium', 'high', null] as const;
const REASONS = ['low_risk_operation', 'weak_session_continuity', 'bulk_or_export_volume', 'privileged_write', 'high_sensitivity_operation', 'velocity_limit_exceeded'];
export const GENERATED_SPACING_MS = 1000;

/**
 * n varied events of one environment, one every GENERATED_SPACING_MS from startMs. The moduli are
 * coprime-ish so combinations of filters hit varied, non-empty subsets.
 */
export function generateEvents(environment: string, n: number, startMs: number): EventRecord[] {
  return Array.from({ length: n }, (_, i) => {
    const reasons = REASONS.filter((_, r) => (i + r * 3) % (r + 2) === 0);
    return {
      telemetryId: `gen_${environment}_${i}`,
      environment,
      source: i % 4 === 0 ? 'ingest' : 'evaluate',
      createdAt: startMs + i * GENERATED_SPACING_MS,
      operationKey: OPERATIONS[i % OPERATIONS.length]!,
      actorId: `actor_${i % 23}`,
      resourceType: RESOURCE_TYPES[i % RESOURCE_TYPES.length]!,
      resourceId: `res_${i % 41}`,
      decision: DECISIONS[i % DECISIONS.length]!,
      score: (i * 7) % 101,
      riskBand: BANDS[i % BANDS.length]!,
      reasons,
      policyId: 'standard',
      policyVersionId: null,
      requestSummary: { requestedCount: i % 9 },
      explanation: { signals: [{ name: 'velocity', value: 0.5, weight: 10, contribution: 5 }], rules: [] },
    };
  });
}

export const query = (params: Record<string, string | number | undefined>): string => {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
  return q.toString();
};

/** Follows nextCursor to the end; returns every page. */
export async function walk(url: string, key: string, params: Record<string, string | number | undefined>): Promise<DecisionEvent[][]> {
  const pages: DecisionEvent[][] = [];
  let cursor: string | undefined;
  do {
    const res = await get(`${url}/api/events?${query({ ...params, cursor })}`, key);
    if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}: ${JSON.stringify(res.body)}`);
    pages.push(res.body.events);
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

export interface StreamClient {
  /** Resolves with the next n events received (in order, with their SSE ids). */
  take(n: number): Promise<{ id: string; event: DecisionEvent }[]>;
  /** Resolves at the next comment line (heartbeat). */
  nextComment(): Promise<string>;
  status: number;
  close(): void;
}

/** A GET /api/events/stream client over fetch, resuming after lastEventId when given. */
export async function openStream(url: string, key: string, params: Record<string, string> = {}, lastEventId?: string): Promise<StreamClient> {
  const abort = new AbortController();
  const res = await fetch(`${url}/api/events/stream?${query(params)}`, {
    headers: { authorization: `Bearer ${key}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal: abort.signal,
  });
  const received: { id: string; event: DecisionEvent }[] = [];
  const comments: string[] = [];
  let waiters: (() => void)[] = [];
  let ended = false;
  const notify = () => {
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };
  if (res.ok && res.body) {
    void (async () => {
      try {
        for await (const item of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
          if (item.kind === 'message') received.push({ id: item.id!, event: JSON.parse(item.data) });
          else comments.push(item.text);
          notify();
        }
      } catch {
        /* aborted */
      }
      ended = true;
      notify();
    })();
  }
  const until = async (ready: () => boolean) => {
    while (!ready()) {
      if (ended) throw new Error('the stream ended');
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return {
    status: res.status,
    async take(n) {
      await until(() => received.length >= n);
      return received.splice(0, n);
    },
    async nextComment() {
      const seen = comments.length;
      await until(() => comments.length > seen);
      return comments[comments.length - 1]!;
    },
    close: () => abort.abort(),
  };
}

/** The telemetryIds of every page of a filter read straight from the store, `limit` at a time, each page resuming after the last. */
export async function storePages(events: KnexEventStore, environment: string, filter: EventFilter, order: 'asc' | 'desc', limit: number): Promise<string[]> {
  const ids: string[] = [];
  for (let at: number | undefined; ; ) {
    const page = await events.page(environment, filter, { order, limit, ...(order === 'desc' ? { before: at } : { after: at }) });
    ids.push(...page.map((e) => e.telemetryId));
    if (page.length < limit) return ids;
    at = page[page.length - 1]!.seq;
  }
}

/**
 * A server on a fresh store whose stream has sent `count` ingested events, for tests of what
 * retention or a restore leaves behind: their stream ids oldest first, `ingest` for one more,
 * `pruneAll` (retention's own pass, as if two days had gone by with one kept: every event goes) and
 * `restart` (a new process on the same store). `current()` is the running server.
 */
export async function streamedStore(t: ExecutionContext, store: StoreKind, count: number) {
  const db = freshDatabase(store);
  let tps: RunningTps | undefined = await startTps({ databaseUrl: db.url });
  t.teardown(async () => {
    await tps?.close();
    await db.drop();
  });
  const current = () => tps!;
  const { environment, secretKey } = await newEnvironment(current());
  const ingest = async () => {
    const record = ingestRecord();
    t.is((await post(`${current().url}/api/events/ingest`, record, secretKey)).status, 201);
    return record.telemetryId;
  };
  const stream = await openStream(current().url, secretKey);
  let ids: string[];
  try {
    t.is(stream.status, 200);
    for (let i = 0; i < count; i++) await ingest();
    ids = (await stream.take(count)).map((e) => e.id);
  } finally {
    stream.close();
  }
  const DAY_MS = 86_400_000;
  const pruneAll = () => new RetentionPruner(current().tps.events, { days: 1, intervalMs: 60_000, batch: 1000, pauseMs: 0, now: () => Date.now() + 2 * DAY_MS }).runOnce();
  const restart = async () => {
    const old = tps;
    tps = undefined;
    await old?.close();
    tps = await startTps({ databaseUrl: db.url });
    return tps;
  };
  return { current, environment, secretKey, ingest, ids, pruneAll, restart };
}
