import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Request } from 'autocannon';
import { openDatabase } from '../src/store/db.js';
import { KnexKeyStore } from '../src/store/keyStore.js';
import { BENCH_ACTORS, bytesPerEvent, eventTemplates, fillEvents, measureGets, type Latency } from './lib-events.js';
import { evaluateRequests, ingestRequests } from './mix.js';
import { freePort, startNode, waitReady } from './proc.js';
import { prepareStore } from './store.js';

/**
 * `npm run bench:events` (issue 3): for each store, 1,000,000 events in the Decision Logs, then over
 * real HTTP against a production-mode server: the p95 of GET /api/events with one filter and with
 * three, ingest and evaluate throughput on that store, and the store's bytes per event.
 *
 *   BENCH_STORES=sqlite,postgres   BENCH_EVENTS=1000000   BENCH_SECONDS=10   BENCH_CONNECTIONS=4
 *   BENCH_PG_URL=postgres://root@127.0.0.1:5432/test (a schema of its own is created and dropped)
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SERVER = path.join(ROOT, 'dist/src/server.js');
const ENV = 'bench';
const DAY = 86_400_000;

const int = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const cfg = {
  stores: (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()),
  events: int('BENCH_EVENTS', 1_000_000),
  seconds: int('BENCH_SECONDS', 10),
  connections: int('BENCH_CONNECTIONS', 4),
  writeConnections: int('BENCH_WRITE_CONNECTIONS', 32),
  pgUrl: process.env.BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/test',
};
const log = (line: string) => process.stderr.write(`${line}\n`);

/** Filter combinations as they occur in the stored events, and ones that never do. */
interface Combos {
  existing: { odr: string[]; rds: string[] };
  absent: string[];
  /** reason+decision+source that never occur, though each decision+source does: no facet lookup rules them out. */
  absentRds: string[];
}

async function sampleCombos(db: Awaited<ReturnType<typeof openDatabase>>): Promise<Combos> {
  const rows: { operation_key: string; decision: string; risk_band: string | null; reasons: string; source: string }[] = await db
    .knex('events')
    .select('operation_key', 'decision', 'risk_band', 'reasons', 'source')
    .where('environment', ENV)
    .orderBy('seq', 'desc')
    .limit(20_000);
  const odr = new Set<string>();
  const rds = new Set<string>();
  for (const r of rows) {
    if (r.risk_band) odr.add(`operationKey=${r.operation_key}&decision=${r.decision}&riskBand=${r.risk_band}`);
    for (const reason of JSON.parse(r.reasons) as string[]) rds.add(`reason=${reason}&decision=${r.decision}&source=${r.source}`);
  }
  const ops = [...new Set(rows.map((r) => r.operation_key))];
  const absent: string[] = [];
  for (const op of ops) {
    for (const decision of ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny']) {
      for (const band of ['low', 'medium', 'high']) {
        const q = `operationKey=${op}&decision=${decision}&riskBand=${band}`;
        if (!odr.has(q)) absent.push(q);
      }
    }
  }
  const reasons = [...new Set(rows.flatMap((r) => JSON.parse(r.reasons) as string[]))];
  const pairs = [...new Set(rows.map((r) => `decision=${r.decision}&source=${r.source}`))];
  const absentRds = reasons.flatMap((reason) => pairs.map((pair) => `reason=${reason}&${pair}`)).filter((q) => !rds.has(q));
  return { existing: { odr: [...odr], rds: [...rds] }, absent, absentRds };
}

/** The searches measured: each request of a case varies its values, so no two in a row are alike. */
function searches(now: number, combos: Combos): Record<string, string[]> {
  const pick = <T>(list: T[], i: number) => list[i % list.length]!;
  const ops = ['customer.create', 'invoice.export', 'bank_account.update', 'payment_transaction.create', 'customer.read_pii'];
  const decisions = ['allow', 'allow_redacted', 'step_up_required', 'throttle', 'deny'];
  const reasons = ['high_sensitivity_operation', 'policy_redaction_applied', 'velocity_limit_exceeded', 'bulk_or_export_volume', 'low_risk_operation'];
  const iso = (ms: number) => new Date(ms).toISOString();
  const many = (f: (i: number) => string) => Array.from({ length: 200 }, (_, i) => `/api/events?${f(i)}`);
  return {
    'one filter: actorId': many((i) => `actorId=user-${(i * 37) % BENCH_ACTORS}`),
    // An identifier never stored: in SQLite a probe of every chunk of seqs (src/store/idChunks.ts).
    'one filter: actorId that matches nothing': many((i) => `actorId=nobody-${i}`),
    'one filter: decision': many((i) => `decision=${pick(decisions, i)}`),
    'one filter: reason': many((i) => `reason=${pick(reasons, i)}`),
    'one filter: time window (1 day, 1-29 days ago)': many((i) => `from=${iso(now - (2 + (i % 28)) * DAY)}&to=${iso(now - (1 + (i % 28)) * DAY)}`),
    'three filters: actorId+operationKey+from': many((i) => `actorId=user-${(i * 53) % BENCH_ACTORS}&operationKey=${pick(ops, i)}&from=${iso(now - 7 * DAY)}`),
    'three filters: operationKey+decision+riskBand': many((i) => pick(combos.existing.odr, i)),
    'three filters: reason+decision+source': many((i) => pick(combos.existing.rds, i)),
    'three filters that match nothing: operationKey+decision+riskBand': many((i) => pick(combos.absent, i)),
    'three filters that match nothing: reason+decision+source': many((i) => pick(combos.absentRds, i)),
  };
}

interface StoreResult {
  store: string;
  events: number;
  fillPerSecond: number;
  bytesPerEvent: number;
  searches: Record<string, Latency>;
  evaluateRps: number;
  ingestRps: number;
}

async function throughput(url: string, requestsOf: (conn: number) => Request[], idReplacement: boolean): Promise<number> {
  // autocannon cycles each connection through its own requests.
  const requests = Array.from({ length: cfg.writeConnections }, (_, c) => requestsOf(c)).flat();
  const result = await autocannon({ url, connections: cfg.writeConnections, duration: cfg.seconds, requests, idReplacement });
  return Math.round(result['2xx'] / cfg.seconds);
}

/** Follows nextCursor 20 pages down, for a set of cursors to time deep pages with. */
async function deepCursors(url: string, key: string): Promise<string[]> {
  const paths: string[] = [];
  for (const decision of ['allow', 'deny', 'throttle']) {
    let cursor = '';
    for (let page = 0; page < 20; page++) {
      const res = await fetch(`${url}/api/events?decision=${decision}${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${key}` } });
      cursor = ((await res.json()) as { nextCursor: string }).nextCursor;
      paths.push(`/api/events?decision=${decision}&cursor=${cursor}`);
    }
  }
  return paths;
}

async function benchStore(kind: string): Promise<StoreResult> {
  const store = await prepareStore(kind === 'postgres' ? cfg.pgUrl : undefined);
  const secretKey = `svc_sec_${crypto.randomBytes(24).toString('base64url')}`;
  try {
    const db = await openDatabase(store.url);
    let fillPerSecond: number;
    let bytes: number;
    let combos: Combos;
    try {
      await new KnexKeyStore(db.knex).ensureEnvironment(ENV);
      const templates = await eventTemplates(ROOT, ENV);
      let last = 0;
      fillPerSecond = await fillEvents(db, templates, cfg.events, {
        batch: 5000,
        progress: (done) => {
          if (done - last >= 100_000 || done === cfg.events) log(`  ${kind}: ${(last = done).toLocaleString('en')} events stored`);
        },
      });
      // What autovacuum does on its own shortly after such a load; SQLite's planner needs no statistics here.
      if (db.dialect === 'postgres') await db.knex.raw('VACUUM ANALYZE events');
      bytes = (await bytesPerEvent(db)).perEvent;
      combos = await sampleCombos(db);
    } finally {
      await db.close();
    }

    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const server = startNode([SERVER], {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: store.url,
      TPS_SECRET_KEY: secretKey,
      TPS_ENVIRONMENT: ENV,
      TPS_CONFIG_DIR: ROOT,
      HOST: '127.0.0.1',
      PORT: String(port),
    });
    try {
      await waitReady(`${url}/healthz`, server);
      const results: Record<string, Latency> = {};
      const cases = { ...searches(Date.now(), combos), 'page 20 deep: decision (cursor)': await deepCursors(url, secretKey) };
      for (const [name, paths] of Object.entries(cases)) {
        await measureGets(url, secretKey, paths, 2, cfg.connections); // warm-up
        results[name] = await measureGets(url, secretKey, paths, cfg.seconds, cfg.connections);
        log(`  ${kind}: ${name}: p50 ${results[name]!.p50} ms, p95 ${results[name]!.p95} ms, p99 ${results[name]!.p99} ms, ${results[name]!.rps} req/s${results[name]!.non2xx ? `, ${results[name]!.non2xx} non-2xx!` : ''}`);
      }
      await throughput(url, (c) => evaluateRequests(secretKey, c), false); // warm-up
      const evaluateRps = await throughput(url, (c) => evaluateRequests(secretKey, c), false);
      const ingestRps = await throughput(url, (c) => ingestRequests(secretKey, c), true);
      log(`  ${kind}: evaluate ${evaluateRps}/s, ingest ${ingestRps}/s, ${Math.round(bytes)} bytes per event`);
      return { store: kind, events: cfg.events, fillPerSecond: Math.round(fillPerSecond), bytesPerEvent: Math.round(bytes), searches: results, evaluateRps, ingestRps };
    } finally {
      await server.stop();
    }
  } finally {
    await store.drop();
  }
}

async function main(): Promise<void> {
  if (!fs.existsSync(SERVER)) throw new Error(`${SERVER} is missing: run "npm run build" first (npm run bench:events does)`);
  log(`Decision Logs benchmark: ${cfg.events.toLocaleString('en')} events, ${cfg.seconds} s per measure, ${cfg.connections} search connections; ${os.cpus().length} cores`);
  const results: StoreResult[] = [];
  for (const kind of cfg.stores) results.push(await benchStore(kind));

  const names = Object.keys(results[0]!.searches);
  const cell = (r: StoreResult, n: string) => `${r.searches[n]!.p95} ms`;
  const lines = [
    `| measure (${cfg.events.toLocaleString('en')} events) | ${results.map((r) => r.store).join(' | ')} |`,
    `|---|${results.map(() => '---|').join('')}`,
    ...names.map((n) => `| p95 GET /api/events, ${n} | ${results.map((r) => cell(r, n)).join(' | ')} |`),
    `| ingest throughput (req/s) | ${results.map((r) => r.ingestRps).join(' | ')} |`,
    `| evaluate throughput, same store (req/s) | ${results.map((r) => r.evaluateRps).join(' | ')} |`,
    `| ingest / evaluate | ${results.map((r) => (r.ingestRps / Math.max(1, r.evaluateRps)).toFixed(2)).join(' | ')} |`,
    `| store bytes per event | ${results.map((r) => r.bytesPerEvent).join(' | ')} |`,
    `| bulk fill (events/s) | ${results.map((r) => r.fillPerSecond).join(' | ')} |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n${JSON.stringify({ config: cfg, results })}\n`);
}

main().catch((err) => {
  log(`bench:events failed: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
