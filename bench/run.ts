import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Request } from 'autocannon';
import { CASES, EXPECTED_SHARE, evaluateRequests, ingestRequests, jsonHeaders, rawRequests } from './mix.js';
import { paced } from './paced.js';
import { ANSWERS_CSV_HEADER, answersCsv, describeEpisodes, describeOverTarget, describeSplit, nearestRank, phaseSplit, type PhaseSplit } from './split.js';
import { diskFloor } from './diskFloor.js';
import { contextSwitches, coreWaitSeconds, cpuSeconds, freePort, machineSeconds, rssMb, npmStartFlags, startNode, threadCounters, waitReady, writtenBytes, type Child } from './proc.js';
import { phaseFigures, scrape, type PhaseFigures, type Scrape } from './serverMetrics.js';
import { prepareStore } from './store.js';
import { describeThreads, threadSplit, type ThreadSplit } from './threads.js';
import { deleteKeysUnder } from '../src/state/redis.js';

/**
 * `npm run bench` (issue 7): the bare-Koa baseline, then TPS in production mode (compiled JS,
 * NODE_ENV=production, LOG_LEVEL=warn, a fresh store), each its own process on loopback, driven
 * from this process. Prints a table and, as its last line, one JSON object.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// BENCH_SERVER: another build's server.js, e.g. to compare before and after a change.
const SERVER = path.resolve(process.env.BENCH_SERVER || path.join(ROOT, 'dist/src/server.js'));

function int(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`);
  return n;
}

function percents(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  return raw.split(',').map((part) => {
    const n = Number(part.trim());
    if (!Number.isInteger(n) || n < 1 || n > 100) throw new Error(`${name} takes whole percents from 1 to 100, separated by commas, got "${raw}"`);
    return n;
  });
}

const workers = int('BENCH_WORKERS', 1, 1);
const cfg = {
  seconds: int('BENCH_SECONDS', 10, 1),
  warmupSeconds: int('BENCH_WARMUP_SECONDS', 3),
  connections: int('BENCH_CONNECTIONS', 32, 1),
  workers,
  /** Long-run mode: this many more evaluations after the phases, RSS sampled every `rssEvery`. */
  total: int('BENCH_TOTAL', 0),
  rssEvery: int('BENCH_RSS_EVERY', 250_000, 1),
  /** A fixed rate for the paced phase instead of half of the measured maximum (0: half). */
  pacedRate: int('BENCH_PACED_RATE', 0),
  /** The load curve's points (phase `curve`), as percents of evaluate's maximum. */
  curve: percents('BENCH_CURVE', [10, 25, 75]),
  databaseUrl: process.env.BENCH_DATABASE_URL || undefined,
  // Several workers share challenges and velocity counts through Redis (src/cluster/primary.ts).
  redisUrl: process.env.BENCH_REDIS_URL || (workers > 1 ? 'redis://127.0.0.1:6379' : undefined),
  phases: new Set((process.env.BENCH_PHASES || 'baseline,evaluate,ingest,half,floor,disk').split(',').map((s) => s.trim())),
  /**
   * A nice value for the servers and this driver (e.g. -10; below 0 needs root), so that on a
   * shared machine other work yields the cores to the benchmark. Unset: priorities are left alone.
   */
  nice: process.env.BENCH_NICE ? Number(process.env.BENCH_NICE) : undefined,
  /** A CSV file for every paced phase's answers, one line each (split.ts, answersCsv); rewritten by each run. */
  answersFile: process.env.BENCH_ANSWERS || undefined,
  /** Extra node flags for the TPS process, e.g. "--cpu-prof --cpu-prof-dir=prof". */
  nodeArgs: (process.env.BENCH_NODE_ARGS || '').split(/\s+/).filter(Boolean),
  /**
   * Node flags for the baseline and TPS alike: those `npm start` runs the service with unless
   * BENCH_START_FLAGS says otherwise (set empty for none), so the ratio compares the service, not
   * a runtime flag.
   */
  startFlags:
    process.env.BENCH_START_FLAGS !== undefined
      ? process.env.BENCH_START_FLAGS.split(/\s+/).filter(Boolean)
      : npmStartFlags(ROOT),
};

/** A point of the load curve (g); floorP99Ms is the bare route's p99 at its rate, when (e) ran. */
interface CurvePoint {
  percent: number;
  rate: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUs: number;
  switches: number;
  coreWaitUs: number;
  floorP99Ms?: number;
}

interface Row {
  phase: string;
  rate: string;
  seconds: number;
  ok: number;
  failed: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Server CPU time per 2xx answer, in µs: contention on a shared machine barely moves it. */
  cpuUs: number;
  /**
   * Context switches of the server's threads per 2xx answer: how often a thread slept and was
   * woken, which costs CPU of its own (much more on a VM) and is what a hand-off between threads adds.
   */
  switches: number;
  /**
   * µs per 2xx answer that the server's threads spent runnable but waiting for a core (schedstat):
   * a machine short of cores, which CPU time alone does not show. NaN without schedstat.
   */
  coreWaitUs: number;
  /** Cores kept busy by processes other than the server and this driver during the phase. */
  otherCores: number;
  /**
   * Cores the machine left idle during the phase. At full load, idle cores mean the connections
   * were waiting on latency (the server's commits, a thread's turn, this driver), not on CPU.
   */
  idleCores: number;
  /** KB the server wrote to storage per 2xx answer (the SQLite file and its WAL); NaN where not its own process's writes. */
  writtenKb: number;
  /** The server's own figures for the phase (from /metrics); none with several workers of a build that did not gather their metrics. */
  figures?: PhaseFigures;
  /** A paced phase's answers split by where their time went (split.ts); none without Server-Timing. */
  split?: PhaseSplit;
  /** The server's CPU per answer by thread (threads.ts); none for a cluster or the disk row. */
  threads?: ThreadSplit;
}

const rows: Row[] = [];
/** TPS processes started with several workers. */
const clusters = new Set<number>();
let answered = 0; // 2xx answers from TPS, each of which promised one stored event

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
const log = (line: string) => process.stderr.write(`${line}\n`);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Whether a scrape is the whole service's. With several workers it is where the build gathers them
 * in the primary (src/cluster/metrics.ts), which leaves out each process's start time; an older
 * build's scrape reached one worker, which names its own.
 */
const wholeService = (s: Scrape) => cfg.workers === 1 || !s.has('tps_process_start_time_seconds');

/** Measures around `run`: CPU (the server's with workers, this driver's, everyone else's) and the server's own figures. */
async function metered<T extends { ok: number; seconds: number }>(serverPid: number, url: string, run: () => Promise<T>) {
  const k0 = await scrape(url);
  const s0 = cpuSeconds(serverPid);
  const c0 = cpuSeconds('self');
  const m0 = machineSeconds();
  const w0 = writtenBytes(serverPid);
  const x0 = contextSwitches(serverPid);
  const q0 = coreWaitSeconds(serverPid);
  // A cluster's primary is not where the answers are made: no split by thread.
  const t0 = clusters.has(serverPid) ? undefined : threadCounters(serverPid);
  const result = await run();
  const t1 = t0 && threadCounters(serverPid);
  const switches = contextSwitches(serverPid) - x0;
  const q1 = coreWaitSeconds(serverPid);
  const written = writtenBytes(serverPid) - w0;
  const server = cpuSeconds(serverPid) - s0;
  const m1 = machineSeconds();
  const other = m1.busy - m0.busy - server - (cpuSeconds('self') - c0);
  const k1 = await scrape(url);
  return {
    result,
    cpuUs: result.ok ? Math.round((server / result.ok) * 1e6) : NaN,
    switches: result.ok ? round(Math.max(0, switches) / result.ok, 2) : NaN,
    coreWaitUs: result.ok && q0 !== undefined && q1 !== undefined ? Math.round((Math.max(0, q1 - q0) / result.ok) * 1e6) : NaN,
    otherCores: round(Math.max(0, other) / result.seconds, 2),
    idleCores: round((m1.idle - m0.idle) / result.seconds, 2),
    // PostgreSQL's writes are its own processes', not the server's.
    writtenKb: result.ok && !cfg.databaseUrl ? round(written / 1024 / result.ok, 1) : NaN,
    figures: wholeService(k1) ? phaseFigures(k0, k1, result.seconds) : undefined,
    threads: t0 && t1 ? threadSplit(serverPid, t0, t1, result.ok) ?? undefined : undefined,
  };
}

function summarize(phase: string, rate: string, m: { ok: number; failed: number; seconds: number; latencies: Float64Array }, meter: { cpuUs: number; switches: number; coreWaitUs: number; otherCores: number; idleCores: number; writtenKb: number; figures?: PhaseFigures; threads?: ThreadSplit }, record = true): Row {
  const { cpuUs, switches, coreWaitUs, otherCores, idleCores, writtenKb, figures, threads } = meter;
  // A sorted copy: the paced phases' parts (split.ts) are matched to the latencies by index.
  const sorted = m.latencies.slice().sort();
  const pct = (p: number) => (sorted.length ? round(sorted[nearestRank(sorted.length, p)]!) : NaN);
  const row: Row = {
    phase,
    rate,
    seconds: round(m.seconds),
    ok: m.ok,
    failed: m.failed,
    rps: Math.round(m.ok / m.seconds),
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
    max: sorted.length ? round(sorted[sorted.length - 1]!) : NaN,
    cpuUs,
    switches,
    coreWaitUs,
    otherCores,
    idleCores,
    writtenKb,
    figures,
    threads,
  };
  if (record) rows.push(row);
  log(`  ${phase}: ${row.rps} req/s, p50 ${row.p50} ms, p99 ${row.p99} ms${Number.isNaN(cpuUs) ? '' : `, ${cpuUs} µs server CPU per answer`}${row.failed ? `, ${row.failed} failed` : ''}${otherCores > 0.1 ? `, other processes busy ${otherCores} cores` : ''}`);
  return row;
}

/**
 * Closed loop at full speed: one autocannon instance per connection, each with its own request
 * list (so step-ups and their retries stay paired on one connection); latencies come from each 2xx
 * answer at sub-millisecond resolution.
 */
async function drive(phase: string, serverPid: number, url: string, requestsOf: (conn: number) => Request[], opts: { seconds?: number; amount?: number; idReplacement?: boolean; record?: boolean }): Promise<Row> {
  const { result, ...meter } = await metered(serverPid, url, async () => {
    let latencies = new Float64Array(1 << 16);
    let n = 0;
    const started = performance.now();
    const results = await Promise.all(
      range(cfg.connections).map((conn) => {
        const job = autocannon({
          url,
          connections: 1,
          pipelining: 1,
          timeout: 30,
          // autocannon notices that `duration` has passed only at its next sample (every sampleInt
          // ms): at its default of 1 s, some connections ran a whole second longer than the others,
          // and the phase's last second, at partial load, pulled its req/s down by up to ~9%.
          sampleInt: 100,
          requests: requestsOf(conn),
          ...(opts.idReplacement ? { idReplacement: true } : {}),
          ...(opts.amount ? { amount: Math.ceil(opts.amount / cfg.connections) } : { duration: opts.seconds ?? cfg.seconds }),
        });
        job.on('response', (_client, status, _bytes, ms) => {
          if (status < 200 || status >= 300) return;
          if (n === latencies.length) {
            const grown = new Float64Array(latencies.length * 2);
            grown.set(latencies);
            latencies = grown;
          }
          latencies[n++] = ms;
        });
        return job;
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const ok = results.reduce((a, r) => a + r['2xx'], 0);
    const failed = results.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
    return { ok, failed, seconds, latencies: latencies.subarray(0, n) };
  });
  return summarize(phase, 'max', result, meter, opts.record);
}

/**
 * A paced phase, after a warm-up at its own rate (BENCH_WARMUP_SECONDS, not measured): it starts
 * from that load, not from the phase before. Right after a full-load phase, a 50% phase's first
 * three seconds held most of its slow answers (bench/ROUNDS.md, sixteenth round). `answers` counts
 * every 2xx, the warm-up's included.
 */
async function drivePaced(phase: string, serverPid: number, port: number, secretKey: string, rate: number): Promise<{ row: Row; answers: number }> {
  const requests = range(cfg.connections).map((conn) => rawRequests(`127.0.0.1:${port}`, secretKey, conn));
  let warmed = 0;
  if (cfg.warmupSeconds) {
    warmed = (await paced(port, requests, rate, cfg.warmupSeconds)).ok;
    log(`  warm-up: ${warmed} answers at ${rate}/s`);
  }
  const { result, ...meter } = await metered(serverPid, `http://127.0.0.1:${port}`, () => paced(port, requests, rate, cfg.seconds));
  const split = phaseSplit(result.latencies, result.parts);
  if (cfg.answersFile) fs.appendFileSync(cfg.answersFile, answersCsv(phase, result.latencies, result.parts));
  const row = summarize(phase, `${rate}/s`, result, meter);
  if (split) row.split = split;
  return { row, answers: warmed + result.ok };
}

async function warmup(serverPid: number, url: string, requestsOf: (conn: number) => Request[], idReplacement = false): Promise<number> {
  if (!cfg.warmupSeconds) return 0;
  return (await drive('warm-up', serverPid, url, requestsOf, { seconds: cfg.warmupSeconds, idReplacement, record: false })).ok;
}

/** Sends each case once and checks its decision, so a misconfigured run fails before it measures. */
async function preflight(url: string, secretKey: string): Promise<{ ingest: boolean }> {
  const n = crypto.randomInt(1e9);
  for (const c of CASES) {
    const res = await fetch(`${url}/api/evaluate`, { method: 'POST', headers: jsonHeaders(secretKey), body: JSON.stringify(c.body(n)) });
    const text = await res.text();
    if (res.status !== 200 || !text.startsWith(`{"decision":"${c.expect}"`) || (c.contains && !text.includes(c.contains))) {
      throw new Error(`preflight: case "${c.name}" answered ${res.status} ${text.slice(0, 300)}`);
    }
    answered++;
  }
  const probe = await fetch(`${url}/api/events/ingest`, { method: 'POST', headers: jsonHeaders(secretKey), body: '{}' });
  return { ingest: probe.status !== 404 };
}

// The baseline checks no key; the requests carry one so that they are the bytes TPS is sent.
const BASELINE_KEY = 'svc_sec_baseline';

/** Starts the bare Koa baseline in its own process, warms it up, runs `measure` on it and stops it. */
async function withBaseline<T>(measure: (pid: number, port: number, url: string) => Promise<T>): Promise<T> {
  const port = await freePort();
  const baseline = startNode([...cfg.startFlags, '--import', 'tsx', path.join(ROOT, 'bench/baseline.ts')], { NODE_ENV: 'production', PORT: String(port) }, cfg.nice);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitListening(url, baseline);
    await warmup(baseline.pid, url, (conn) => evaluateRequests(BASELINE_KEY, conn));
    return await measure(baseline.pid, port, url);
  } finally {
    await baseline.stop();
  }
}

async function runBaseline(): Promise<number | null> {
  if (!cfg.phases.has('baseline')) return null;
  return withBaseline(async (pid, _port, url) => (await drive('baseline (bare Koa)', pid, url, (conn) => evaluateRequests(BASELINE_KEY, conn), {})).rps);
}

/**
 * (e) The floor under (d): the bare Koa baseline paced by the same driver at the same rate. Its
 * p99 is what this machine's scheduling, loopback and driver cost alone, so (d)'s p99 above it is
 * TPS's own. Run after TPS has stopped, so nothing of ours competes for the cores.
 */
async function runFloor(rate: number): Promise<Row> {
  return withBaseline(async (pid, port) => (await drivePaced('bare Koa, paced at the same rate', pid, port, BASELINE_KEY, rate)).row);
}

/** The same floor under each point of the load curve (g), from one baseline process. */
async function runCurveFloors(points: readonly CurvePoint[]): Promise<void> {
  await withBaseline(async (pid, port) => {
    for (const point of points) point.floorP99Ms = (await drivePaced(`bare Koa, paced as the ${point.percent}% row`, pid, port, BASELINE_KEY, point.rate)).row.p99;
  });
}

/**
 * (f) The disk alone under (d): (d)'s commits, at its rate and mean size, as plain writes each
 * followed by fdatasync (bench/diskFloor.ts). With TPS_SQLITE_SYNC=full every answer waits for its
 * commit's sync, so stalls this row shows can reach (d)'s tail. SQLite only: there the server's
 * own writes are the commits'.
 */
async function runDiskFloor(half: Row | undefined): Promise<Row | undefined> {
  const perCommit = half?.figures?.perCommit ?? NaN;
  if (!half || !(perCommit > 0) || !Number.isFinite(half.writtenKb)) return undefined;
  const commitsPerSecond = half.rps / perCommit;
  const result = await diskFloor(commitsPerSecond, half.writtenKb * 1024 * perCommit, cfg.seconds);
  return summarize(`disk alone: (d)'s commits, write + fdatasync`, `${Math.round(commitsPerSecond)}/s`, result, { cpuUs: NaN, switches: NaN, coreWaitUs: NaN, otherCores: 0, idleCores: NaN, writtenKb: round(half.writtenKb * perCommit, 1) });
}

// tps_evaluation_thread's values, as the run's header says them.
const WHERE_EVALUATE: Record<string, string> = { '1': 'in the evaluation thread', '0': 'in the HTTP thread' };

async function main(): Promise<void> {
  if (!fs.existsSync(SERVER)) throw new Error(`${SERVER} is missing: run "npm run build" first (npm run bench does)`);
  if (cfg.nice !== undefined) os.setPriority(cfg.nice);
  if (cfg.answersFile) fs.writeFileSync(cfg.answersFile, `${ANSWERS_CSV_HEADER}\n`);
  log(
    `TPS benchmark: ${cfg.seconds} s per phase, ${cfg.connections} connections, ${cfg.workers} worker(s), store ${cfg.databaseUrl ? 'postgres' : 'sqlite'}${cfg.redisUrl ? ', state in Redis' : ''}, node flags ${cfg.startFlags.join(' ') || 'none'}; ` +
      `${os.cpus().length} cores${cfg.nice !== undefined ? `, nice ${cfg.nice}` : ''}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );

  // (a) the bare Koa baseline, measured alone so nothing else of ours competes for the cores.
  const baselineRps = await runBaseline();

  const store = await prepareStore(cfg.databaseUrl);
  const secretKey = `svc_sec_${crypto.randomBytes(24).toString('base64url')}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const redisPrefix = `tps-bench:${crypto.randomBytes(4).toString('hex')}:`;
  const server = startNode([...cfg.startFlags, ...cfg.nodeArgs, SERVER], {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    DATABASE_URL: store.url,
    TPS_SECRET_KEY: secretKey,
    TPS_ENVIRONMENT: 'bench',
    TPS_CONFIG_DIR: ROOT,
    HOST: '127.0.0.1',
    PORT: String(port),
    TPS_WORKERS: String(cfg.workers),
    // The paced phases' split (split.ts); a compare can turn it off to see what it costs.
    TPS_SERVER_TIMING: process.env.TPS_SERVER_TIMING ?? 'true',
    // Under a prefix of the run's own, dropped afterwards: the Redis may be a deployment's.
    ...(cfg.redisUrl ? { REDIS_URL: cfg.redisUrl, TPS_REDIS_PREFIX: redisPrefix } : {}),
  }, cfg.nice);
  if (cfg.workers > 1) clusters.add(server.pid);
  let evaluate: Row | undefined;
  let ingest: Row | undefined;
  let half: Row | undefined;
  let halfRate: number | undefined;
  const rssSamples: { evaluations: number; rssMb: number }[] = [];
  const curve: CurvePoint[] = [];
  let rss = NaN;
  let stored: Awaited<ReturnType<typeof store.count>> | undefined;
  // Where evaluate ran, as the server resolved TPS_EVALUATE_THREAD (one worker's word with several).
  let evaluateThread: boolean | undefined;
  try {
    await waitReady(`${url}/healthz`, server);
    // A build from before the gauge (BENCH_SERVER) does not say.
    const gauge = (await scrape(url)).get('tps_evaluation_thread');
    if (gauge !== undefined) evaluateThread = gauge === 1;
    log(`  TPS is up: pid ${server.pid}, ${url}; evaluate ${WHERE_EVALUATE[String(gauge)] ?? 'not reported'}`);
    const { ingest: hasIngest } = await preflight(url, secretKey);
    const evaluateOf = (conn: number) => evaluateRequests(secretKey, conn);
    answered += await warmup(server.pid, url, evaluateOf);

    // (b) evaluate at full speed.
    if (cfg.phases.has('evaluate')) {
      evaluate = await drive('evaluate (mix, max rate)', server.pid, url, evaluateOf, {});
      answered += evaluate.ok;
    }
    // (c) ingest at full speed.
    if (cfg.phases.has('ingest')) {
      if (hasIngest) {
        const ingestOf = (conn: number) => ingestRequests(secretKey, conn);
        answered += await warmup(server.pid, url, ingestOf, true);
        ingest = await drive('ingest (max rate)', server.pid, url, ingestOf, { idReplacement: true });
        answered += ingest.ok;
      } else {
        log('  ingest: POST /api/events/ingest answers 404 in this build; phase skipped');
      }
    }
    // A share of (b)'s maximum, as a paced rate.
    const rateAt = (percent: number) => Math.max(1, Math.round((evaluate!.rps * percent) / 100));
    // (d) evaluate at half of (b)'s rate, evenly paced, for latency under normal load.
    if (cfg.phases.has('half') && (evaluate || cfg.pacedRate)) {
      halfRate = cfg.pacedRate || rateAt(50);
      const phase = await drivePaced(cfg.pacedRate ? 'evaluate (fixed rate, paced)' : 'evaluate (50% of max, paced)', server.pid, port, secretKey, halfRate);
      half = phase.row;
      answered += phase.answers;
    }
    // (g) The load curve: evaluate paced at other shares of (b)'s rate, for how an answer's CPU,
    // wake-ups and tail change with load (on a VM, a thread that sleeps between requests runs cold).
    if (cfg.phases.has('curve') && evaluate) {
      for (const percent of cfg.curve) {
        const rate = rateAt(percent);
        // A 50% point is (d) itself, whose row it would otherwise duplicate under the same name.
        let row = percent === 50 && halfRate === rate ? half : undefined;
        if (!row) {
          const phase = await drivePaced(`evaluate (${percent}% of max, paced)`, server.pid, port, secretKey, rate);
          row = phase.row;
          answered += phase.answers;
        }
        curve.push({ percent, rate, rps: row.rps, p50Ms: row.p50, p99Ms: row.p99, cpuUs: row.cpuUs, switches: row.switches, coreWaitUs: row.coreWaitUs });
      }
    } else if (cfg.phases.has('curve')) {
      log('  curve: needs the evaluate phase, whose maximum it takes shares of; skipped');
    }
    // Long run: RSS after every BENCH_RSS_EVERY evaluations.
    if (cfg.total > 0) {
      let done = 0;
      rssSamples.push({ evaluations: done, rssMb: rssMb(server.pid) });
      while (done < cfg.total) {
        const amount = Math.min(cfg.rssEvery, cfg.total - done);
        const row = await drive(`long run to ${done + amount}`, server.pid, url, evaluateOf, { amount });
        answered += row.ok;
        done += row.ok + row.failed;
        rssSamples.push({ evaluations: done, rssMb: rssMb(server.pid) });
        log(`    RSS after ${done} long-run evaluations: ${rssSamples.at(-1)!.rssMb} MB`);
      }
    }
    rss = rssMb(server.pid);
  } finally {
    const code = await server.stop();
    if (code !== 0) log(`  TPS exited with code ${code}`);
    try {
      stored = await store.count();
    } finally {
      await store.drop();
      if (cfg.redisUrl) await deleteKeysUnder(cfg.redisUrl, redisPrefix);
    }
  }

  const floor = cfg.phases.has('floor') && halfRate ? await runFloor(halfRate) : undefined;
  // (e) is already the floor of a point at (d)'s rate.
  if (floor) for (const point of curve) if (point.rate === halfRate) point.floorP99Ms = floor.p99;
  const unfloored = curve.filter((p) => p.floorP99Ms === undefined);
  if (cfg.phases.has('floor') && unfloored.length) await runCurveFloors(unfloored);
  const disk = cfg.phases.has('disk') ? await runDiskFloor(half) : undefined;

  printTable(rss, stored, rssSamples);
  const summary = {
    baselineRps,
    evaluateRps: evaluate?.rps ?? null,
    ingestRps: ingest?.rps ?? null,
    evaluateRatio: evaluate && baselineRps ? round(evaluate.rps / baselineRps, 3) : null,
    evaluateP50Ms: evaluate?.p50 ?? null,
    evaluateP99Ms: evaluate?.p99 ?? null,
    evaluateHalfLoadP50Ms: half?.p50 ?? null,
    evaluateHalfLoadP99Ms: half?.p99 ?? null,
    evaluateHalfLoadSplitMs: half?.split ?? null,
    evaluateThreadsUs: evaluate?.threads ?? null,
    evaluateIdleCores: evaluate?.idleCores ?? null,
    evaluateHalfLoadThreadsUs: half?.threads ?? null,
    baselineHalfLoadP99Ms: floor?.p99 ?? null,
    diskFloorP99Ms: disk?.p99 ?? null,
    rssMb: rss,
    eventsStored: stored.total,
    workers: cfg.workers,
    store: cfg.databaseUrl ? 'postgres' : 'sqlite',
    evaluateThread: evaluateThread ?? null,
    ...(rssSamples.length ? { rssSamplesMb: rssSamples } : {}),
    ...(curve.length ? { curve } : {}),
  };
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

async function waitListening(url: string, child: Child): Promise<void> {
  // The baseline has no health route; any HTTP answer (404 included) means it is listening.
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error('the baseline exited before listening');
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error('the baseline did not start');
}

function printTable(rss: number, stored: { total: number; byDecision: Record<string, number>; invalidChallenges: number } | undefined, samples: { evaluations: number; rssMb: number }[]): void {
  const head = ['phase', 'rate', 'secs', '2xx', 'failed', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'server CPU µs/req', 'switches/req', 'core wait µs/req', 'written KB/req', 'events/commit', 'commit ms mean/p99', 'checkpoints/s × ms', 'GC % HTTP/eval', 'loop late p99 ms', 'others busy (cores)', 'idle (cores)'];
  // '-' where a figure is missing: several workers of a build that did not gather their metrics, or a server (the baseline) without it.
  const show = (digits: number, ...xs: (number | undefined)[]) => (xs.some((x) => x === undefined || Number.isNaN(x)) ? '-' : xs.map((x) => round(x!, digits)).join('/'));
  const body = rows.map((r) => {
    const f = r.figures;
    const checkpoints = f?.checkpointsPerS ? `${show(1, f.checkpointsPerS)} × ${show(2, f.checkpointMeanMs)}` : '-';
    return [r.phase, r.rate, r.seconds, r.ok, r.failed, r.rps, r.p50, r.p90, r.p99, r.max, show(0, r.cpuUs), show(2, r.switches), show(0, r.coreWaitUs), show(1, r.writtenKb), show(1, f?.perCommit), show(2, f?.commitMeanMs, f?.commitP99Ms), checkpoints, f ? `${show(1, f.gcPct)}/${show(1, f.threadGcPct)}` : '-', show(2, f?.loopP99Ms), r.otherCores, show(2, r.idleCores)].map(String);
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const out = [
    `${cfg.connections} connections; ${cfg.workers} worker(s); store ${cfg.databaseUrl ? 'postgres' : 'sqlite'}`,
    line(head),
    `|${widths.map((w, i) => (i === 0 ? `:${'-'.repeat(w + 1)}` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
    ...body.map(line),
    '',
  ];
  if (stored) {
    out.push(`events stored (SQL count afterwards): ${stored.total}; 2xx answers, each of which promised one: ${answered}`);
    const evaluated = Object.values(stored.byDecision).reduce((a, b) => a + b, 0);
    const mix = Object.entries(EXPECTED_SHARE)
      .map(([d, share]) => `${d} ${stored.byDecision[d] ?? 0} (${(((stored.byDecision[d] ?? 0) / evaluated) * 100).toFixed(1)}%, expected ~${(share * 100).toFixed(1)}%)`)
      .join(', ');
    out.push(`evaluate events by decision: ${mix}`);
    out.push(stored.invalidChallenges ? `WARNING: ${stored.invalidChallenges} step-up retries found no challenge (challenge_invalid)` : 'every step-up retry found its challenge');
  }
  for (const r of rows.filter((row) => row.split)) {
    out.push(`${r.phase}, where the time went (mean per answer; Server-Timing):`);
    out.push(`  all ${r.split!.all.answers} answers: ${describeSplit(r.split!.all)}`);
    out.push(`  slowest 1% (${r.split!.slowest.answers}): ${describeSplit(r.split!.slowest)}`);
    out.push(`  slowest 1% by when they were due: ${describeEpisodes(r.split!.episodes)}`);
    out.push(`  over the target: ${describeOverTarget(r.split!.overTarget)}`);
  }
  const split = rows.filter((row) => row.threads);
  if (split.length) out.push('where the server\'s CPU went, by thread (µs of CPU an answer; waited: µs an answer runnable but waiting for a core; scheduled: times an answer):');
  for (const r of split) out.push(`  ${r.phase}: ${describeThreads(r.threads!)}`);
  out.push(`server RSS after the run: ${rss} MB`);
  for (const s of samples) out.push(`  RSS after ${s.evaluations} long-run evaluations: ${s.rssMb} MB`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
