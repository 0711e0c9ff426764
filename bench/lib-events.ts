import crypto from 'node:crypto';
import autocannon from 'autocannon';
import type { Database } from '../src/store/db.js';
import { ingestEvent } from '../src/events/ingest.js';
import { OfflineEvaluator } from '../src/evaluate/offline.js';
import { loadCatalog } from '../src/policy/catalog.js';
import { KnexEventStore, type EventRecord } from '../src/store/eventStore.js';
import { CASES } from './mix.js';

// Reusable pieces of the Decision Logs benchmark (bench/events.ts): realistic events in bulk, the
// store's size per event, and exact latency percentiles of GET requests over HTTP.

export const BENCH_ACTORS = 5000;
const DAY_MS = 86_400_000;

/**
 * Event templates decided by the real Evaluator over the benchmark's mix (every decision occurs),
 * so explanations carry real signals, rules and facts; plus ingested records. Filling clones them
 * with fresh ids, actors, resources and times.
 */
export async function eventTemplates(configDir: string, environment: string): Promise<EventRecord[]> {
  const offline = new OfflineEvaluator({ catalog: loadCatalog(configDir) });
  const templates: EventRecord[] = [];
  for (let n = 0; n < 60; n++) {
    for (const c of CASES) templates.push((await offline.evaluate(c.body(n) as never, environment)).event);
  }
  for (let n = 0; n < 100; n++) {
    templates.push(
      ingestEvent(
        environment,
        {
          operationKey: 'customer.create',
          actorId: 'x',
          resourceType: 'customer',
          resourceId: 'x',
          telemetryId: 'x',
          requestSummary: { requestedCount: 1 + (n % 5) },
          decision: n % 10 === 0 ? 'deny' : 'allow',
          score: 5 + (n % 60),
          reasons: n % 10 === 0 ? ['velocity_limit_exceeded'] : ['low_risk_operation'],
          normalizedSignals: { weak_session_continuity: (n % 10) / 10, high_sensitivity_operation: 0.3 },
        },
        0,
      ),
    );
  }
  return templates;
}

/**
 * Stores n events spread evenly over the last `days` days (oldest first, as a live service would
 * write them), in large transactions through the store's own insert path, so the indexes and the
 * reason table are exactly what the service maintains. Returns events per second.
 */
export async function fillEvents(db: Database, templates: EventRecord[], n: number, options: { days?: number; batch?: number; progress?: (done: number) => void } = {}): Promise<number> {
  const store = new KnexEventStore(db);
  const batch = options.batch ?? 5000;
  const span = (options.days ?? 30) * DAY_MS;
  const start = Date.now() - span;
  const began = process.hrtime.bigint();
  for (let done = 0; done < n; ) {
    const size = Math.min(batch, n - done);
    const events: EventRecord[] = new Array(size);
    for (let j = 0; j < size; j++) {
      const i = done + j;
      const t = templates[(i * 7919) % templates.length]!;
      events[j] = {
        ...t,
        // Random UUIDs, as evaluate hands out: the unique index grows as it does in service.
        telemetryId: crypto.randomUUID(),
        actorId: `user-${(i * 31) % BENCH_ACTORS}`,
        resourceId: `${t.resourceType}-${(i * 17) % 20000}`,
        createdAt: start + Math.floor((i / n) * span),
      };
    }
    await store.insertBatch(events);
    done += size;
    options.progress?.(done);
  }
  return n / (Number(process.hrtime.bigint() - began) / 1e9);
}

/** Bytes the events, their indexes and their reason index occupy, per event. */
export async function bytesPerEvent(db: Database): Promise<{ total: number; events: number; perEvent: number }> {
  const events = Number((await db.knex('events').count<{ n: number | string }[]>({ n: '*' }).first())?.n ?? 0);
  let total: number;
  if (db.dialect === 'postgres') {
    // Every table that grows with the events, each with its indexes and TOAST.
    const tables = ['events', 'event_reasons', 'event_facets', 'event_time_marks'];
    const [row] = (await db.knex.raw(`select ${tables.map((t) => `pg_total_relation_size('${t}')`).join(' + ')} as bytes`)).rows;
    total = Number(row.bytes);
  } else {
    await db.knex.raw('PRAGMA wal_checkpoint(TRUNCATE)');
    const [pages] = await db.knex.raw('PRAGMA page_count');
    const [size] = await db.knex.raw('PRAGMA page_size');
    const [free] = await db.knex.raw('PRAGMA freelist_count');
    total = (Number(pages.page_count) - Number(free.freelist_count)) * Number(size.page_size);
  }
  return { total, events, perEvent: total / Math.max(1, events) };
}

export interface Latency {
  requests: number;
  non2xx: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

/** Drives GET requests over `paths` (cycled per connection) and returns exact latency percentiles in ms. */
export async function measureGets(url: string, key: string, paths: string[], seconds: number, connections: number): Promise<Latency> {
  const times: number[] = [];
  const headers = { authorization: `Bearer ${key}` };
  const instance = autocannon({ url, connections, duration: seconds, requests: paths.map((path) => ({ method: 'GET', path, headers })) });
  instance.on('response', (_client, _status, _bytes, ms) => times.push(ms));
  const result = await instance;
  times.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    requests: times.length,
    non2xx: result.non2xx,
    rps: Math.round(times.length / seconds),
    p50: round(percentile(times, 50)),
    p95: round(percentile(times, 95)),
    p99: round(percentile(times, 99)),
    max: round(times[times.length - 1] ?? 0),
  };
}
