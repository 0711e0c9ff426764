import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { KEEPS_SCHEDSTAT, npmStartFlags, startFlags } from '../../bench/proc.js';
import { readRun } from '../../bench/table.js';
import type { ThreadSplit } from '../../bench/threads.js';
import { runScript } from '../helpers/script.js';
import { REPO_ROOT } from '../helpers/tps.js';

// `npm run bench` in its short mode, against the server from source: the output issue 7 asks for
// (a table, then one JSON object as the last line), every phase including the floor, and every
// promised event found in the store. No timing is asserted, only that each figure was measured.

function runBench(env: Record<string, string> = {}): ReturnType<typeof runScript> {
  return runScript('bench/run.ts', {
    BENCH_SERVER: path.join(REPO_ROOT, 'src/server.ts'),
    BENCH_NODE_ARGS: '--import tsx',
    BENCH_SECONDS: '1',
    BENCH_WARMUP_SECONDS: '1',
    BENCH_CONNECTIONS: '4',
    TPS_EVALUATE_THREAD: 'auto',
    ...env,
  });
}

test('the benchmark prints every phase, the floors under the 50% row, and the JSON of issue 7 last', async (t) => {
  // Every phase, with the load curve at a point of its own and at (d)'s, and every paced answer to a CSV.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-answers-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const answersFile = path.join(dir, 'answers.csv');
  const { code, stdout, stderr } = await runBench({ BENCH_PHASES: 'baseline,evaluate,ingest,half,floor,disk,curve', BENCH_CURVE: '25,50', BENCH_ANSWERS: answersFile });
  t.is(code, 0, stderr);

  const run = readRun(stdout);
  const summary = run.summary as Record<string, number>;
  const row = (phase: string) => run.rows.get(phase);
  for (const key of ['baselineRps', 'evaluateRps', 'ingestRps', 'evaluateRatio', 'evaluateP50Ms', 'evaluateP99Ms', 'evaluateHalfLoadP50Ms', 'evaluateHalfLoadP99Ms', 'baselineHalfLoadP99Ms', 'diskFloorP99Ms', 'rssMb', 'eventsStored']) {
    const value = summary[key];
    t.true(typeof value === 'number' && Number.isFinite(value) && value > 0, `${key}: ${String(value)}`);
  }
  t.is(summary.evaluateRatio, Math.round((summary.evaluateRps! / summary.baselineRps!) * 1000) / 1000);
  // The default with SQLite: evaluate in the evaluation thread, as the server itself reports.
  t.is((summary as Record<string, unknown>).evaluateThread, true);
  t.true(stderr.includes('evaluate in the evaluation thread'), stderr);
  // The baseline and TPS run with the node flags of `npm start` (package.json's script).
  t.true(stderr.includes(`, node flags ${npmStartFlags(REPO_ROOT).join(' ') || 'none'};`), stderr);

  for (const phase of ['baseline (bare Koa)', 'evaluate (mix, max rate)', 'ingest (max rate)']) {
    const cells = row(phase);
    t.truthy(cells, phase);
    // Every server thread that answered slept and woke at least once in a phase.
    const switches = Number(cells!['switches/req']);
    t.true(switches > 0 && Number.isFinite(switches), `${phase}: switches/req ${cells!['switches/req']}`);
    // Each of those wake-ups waited for a core a little, however idle the machine: schedstat counts
    // from being woken to running. A kernel without schedstat shows none.
    if (KEEPS_SCHEDSTAT) t.true(Number(cells!['core wait µs/req']) > 0, `${phase}: core wait µs/req ${cells!['core wait µs/req']}`);
    else t.is(cells!['core wait µs/req'], '-');
  }
  // The server's CPU by thread (threads.ts): the evaluation thread, found by its name, did work, and
  // the threads together account for the CPU the table shows for the process.
  const byThread = (summary as unknown as { evaluateThreadsUs: ThreadSplit }).evaluateThreadsUs;
  t.true(byThread.http!.cpuUs > 0 && byThread.evaluation!.cpuUs > 0, JSON.stringify(byThread));
  const threadsUs = byThread.http!.cpuUs + byThread.evaluation!.cpuUs + (byThread.rest?.cpuUs ?? 0);
  const processUs = Number(row('evaluate (mix, max rate)')!['server CPU µs/req']);
  t.true(Math.abs(threadsUs - processUs) <= 0.25 * processUs, `threads ${threadsUs} µs an answer against the process's ${processUs}`);
  t.is(byThread.http!.waitUs === null, !KEEPS_SCHEDSTAT);
  // The cores the machine left idle through the phase, from /proc/stat: with the server's and
  // everyone else's but this driver's, no more than the machine has.
  const evaluateRow = row('evaluate (mix, max rate)')!;
  const idle = Number(evaluateRow['idle (cores)']);
  const serverCores = (processUs * Number(evaluateRow['req/s'])) / 1e6;
  t.true(idle >= 0 && idle + serverCores + Number(evaluateRow['others busy (cores)']) <= os.cpus().length + 0.05, `idle ${idle}, server ${serverCores} cores`);
  t.is(summary.evaluateIdleCores, idle);
  // At 50% load too, both threads that make an answer did work.
  const halfByThread = (summary as unknown as { evaluateHalfLoadThreadsUs: ThreadSplit }).evaluateHalfLoadThreadsUs;
  t.true(halfByThread.http!.cpuUs > 0 && halfByThread.evaluation!.cpuUs > 0, JSON.stringify(halfByThread));
  t.regex(stdout, /^ {2}evaluate \(mix, max rate\): HTTP [\d.]+.*; evaluation [\d.]+/m);
  // The bare route has one thread that answers, and no evaluation thread.
  t.regex(stdout, /^ {2}baseline \(bare Koa\): HTTP [\d.]+[^;\n]*; the rest/m);

  const half = row('evaluate (50% of max, paced)');
  const floor = row('bare Koa, paced at the same rate');
  t.truthy(half);
  t.truthy(floor);
  // Same rate, same p99 as the JSON's: the floor is measured where (d) was.
  t.is(floor!.rate, half!.rate);
  // Both paced phases first warm up at their own rate: (d) on TPS, then (e) on the bare route.
  const warmups = stderr.split('\n').filter((l) => new RegExp(`^  warm-up: [1-9]\\d* answers at ${half!.rate}$`).test(l));
  t.is(warmups.length, 2, stderr);
  t.is(Number(floor!['p99 ms']), summary.baselineHalfLoadP99Ms);
  t.is(Number(half!['p99 ms']), summary.evaluateHalfLoadP99Ms);

  // The disk's floor: (d)'s commits replayed as writes + fdatasync, at (d)'s commit rate and size.
  const disk = row("disk alone: (d)'s commits, write + fdatasync");
  t.truthy(disk);
  t.is(Number(disk!['p99 ms']), summary.diskFloorP99Ms);
  t.is(disk!['switches/req'], '-');
  t.is(disk!['core wait µs/req'], '-');
  t.is(disk!['idle (cores)'], '-');
  const [halfRps, halfKb, perCommit] = [Number(half!['req/s']), Number(half!['written KB/req']), Number(half!['events/commit'])];
  t.true(halfKb > 0 && perCommit >= 1, `written KB/req ${halfKb}, events/commit ${perCommit}`);
  const commitRate = halfRps / perCommit;
  t.true(Math.abs(Number.parseFloat(disk!.rate!) - commitRate) <= commitRate * 0.1 + 1, `${disk!.rate} against ${commitRate}`);
  t.true(Math.abs(Number(disk!['written KB/req']) - halfKb * perCommit) <= halfKb * perCommit * 0.1 + 0.1, `${disk!['written KB/req']} KB per commit`);

  // The load curve: evaluate paced at 25% of (b)'s rate, in the table and in the JSON alike.
  const quarter = row('evaluate (25% of max, paced)');
  t.truthy(quarter, stdout);
  const quarterRate = Math.round(summary.evaluateRps! / 4);
  t.is(quarter!.rate, `${quarterRate}/s`);
  const curve = (summary as unknown as { curve: Record<string, number>[] }).curve;
  t.is(curve.length, 2);
  t.like(curve[0], { percent: 25, rate: quarterRate, rps: Number(quarter!['req/s']), p99Ms: Number(quarter!['p99 ms']), cpuUs: Number(quarter!['server CPU µs/req']), switches: Number(quarter!['switches/req']), coreWaitUs: KEEPS_SCHEDSTAT ? Number(quarter!['core wait µs/req']) : null });
  t.true(curve[0]!.rps! > 0 && curve[0]!.cpuUs! > 0 && curve[0]!.switches! > 0 && (!KEEPS_SCHEDSTAT || curve[0]!.coreWaitUs! > 0), JSON.stringify(curve[0]));
  // Its floor: the bare route paced at the same rate.
  const quarterFloor = row('bare Koa, paced as the 25% row');
  t.truthy(quarterFloor, stdout);
  t.is(quarterFloor!.rate, quarter!.rate);
  t.is(curve[0]!.floorP99Ms, Number(quarterFloor!['p99 ms']));
  // The 50% point is (d) and its floor (e), measured once: one row of that name, none of its own floor.
  t.like(curve[1], { percent: 50, rate: Number.parseInt(half!.rate!, 10), p99Ms: summary.evaluateHalfLoadP99Ms, floorP99Ms: summary.baselineHalfLoadP99Ms });
  t.is(stdout.split('\n').filter((l) => l.startsWith('| evaluate (50% of max, paced)')).length, 1, stdout);
  t.false(stdout.includes('paced as the 50% row'), stdout);

  // (d)'s answers split by where their time went, from TPS's Server-Timing (bench/split.ts).
  type Split = { answers: number; latency: number; driver: number; queued: number; http: number; evaluation: number; commit: number; duringCommit?: Record<'bulk' | 'filesync' | 'catchup', number> };
  type Episodes = { count: number; largest: { atMs: number; spanMs: number; answers: number; maxMs: number } };
  type OverTarget = { ms: number; answers: number; percent: number; besideBulk?: { over: number; all: number } };
  const split = (summary as unknown as { evaluateHalfLoadSplitMs: { all: Split; slowest: Split; episodes: Episodes; overTarget: OverTarget } }).evaluateHalfLoadSplitMs;
  t.is(split.all.answers, Number(half!['2xx']));
  t.true(split.slowest.answers >= 1 && split.slowest.answers <= Math.ceil(split.all.answers / 50), JSON.stringify(split));
  for (const s of [split.all, split.slowest]) {
    t.true(s.driver >= 0 && s.evaluation > 0 && s.commit > 0 && s.http > 0, JSON.stringify(s));
    t.true(Math.abs(s.driver + s.http + s.evaluation + s.commit - s.latency) <= 0.05, JSON.stringify(s));
    // Of the driver's part, the wait for a free connection (test/bench/paced.test.ts tests it).
    t.true(s.queued >= 0 && s.queued <= s.driver + 0.01, JSON.stringify(s));
    // SQLite's checkpointer at work during the commit's wait: a part of it, never more.
    t.deepEqual(Object.keys(s.duringCommit ?? {}), ['bulk', 'filesync', 'catchup'], JSON.stringify(s));
    for (const during of Object.values(s.duringCommit!)) t.true(during >= 0 && during <= s.commit + 0.01, JSON.stringify(s));
  }
  t.true(split.slowest.latency >= summary.evaluateHalfLoadP99Ms! - 0.01 && split.slowest.latency >= split.all.latency, JSON.stringify(split));
  const splitLines = stdout.split('\n').filter((l) => l.endsWith('where the time went (mean per answer; Server-Timing):'));
  // (d) and the 25% point; a bare-Koa floor sends no Server-Timing.
  t.deepEqual(splitLines.map((l) => l.split(',')[0]), ['evaluate (50% of max', 'evaluate (25% of max'], stdout);
  t.true(stdout.includes(`  slowest 1% (${split.slowest.answers}): ${split.slowest.latency} ms = driver ${split.slowest.driver} (queued for a connection ${split.slowest.queued}) + HTTP ${split.slowest.http}`), stdout);
  t.true(stdout.includes(`(during the commit's wait: bulk checkpoint ${split.slowest.duringCommit!.bulk}, file sync ${split.slowest.duringCommit!.filesync}, catch-up ${split.slowest.duringCommit!.catchup})`), stdout);
  // The slowest 1% by when they were due (test/bench/paced.test.ts tests the grouping).
  const { episodes } = split;
  t.true(episodes.count >= 1 && episodes.count <= split.slowest.answers && episodes.largest.answers >= 1 && episodes.largest.answers <= split.slowest.answers, JSON.stringify(episodes));
  // Each of its answers is at or above the p99 (rounded to 0.1 ms and 0.01 ms).
  t.true(episodes.largest.maxMs >= summary.evaluateHalfLoadP99Ms! - 0.06, JSON.stringify(episodes));
  t.true(stdout.includes(`  slowest 1% by when they were due: ${episodes.count} episode(s), answers due within 50 ms of one another; the largest ${episodes.largest.answers} answer(s)`), stdout);

  // The answers over the 5 ms target (test/bench/paced.test.ts tests the count and the bulk share):
  // all of the slowest 1% when the p99 is over it, fewer when it is within.
  const { overTarget } = split;
  t.true(overTarget.ms === 5 && overTarget.answers <= split.all.answers, JSON.stringify(overTarget));
  t.is(overTarget.percent, Math.round((1000 * overTarget.answers) / split.all.answers) / 10);
  const p99 = summary.evaluateHalfLoadP99Ms!;
  if (Math.abs(p99 - 5) > 0.01) t.is(overTarget.answers >= split.slowest.answers, p99 > 5, JSON.stringify({ p99, overTarget }));
  t.true(overTarget.besideBulk!.over >= 0 && overTarget.besideBulk!.over <= 100 && overTarget.besideBulk!.all >= 0 && overTarget.besideBulk!.all <= 100, JSON.stringify(overTarget));
  t.true(stdout.includes(`  over the target: ${overTarget.answers} answer(s) over 5 ms, ${overTarget.percent}% of all (a p99 within 5 ms allows 1%)`), stdout);

  // BENCH_ANSWERS: a line for each answer of each paced phase, TPS's and the bare route's alike.
  const [head, ...answerLines] = fs.readFileSync(answersFile, 'utf8').trimEnd().split('\n');
  t.is(head, 'phase,at_ms,epoch_ms,latency_ms,driver_ms,queued_ms,evaluate_ms,commit_ms,bulk_ms,filesync_ms,catchup_ms');
  const perPhase = new Map<string, number>();
  for (const line of answerLines) {
    const phase = /^"([^"]*)",/.exec(line)![1]!;
    perPhase.set(phase, (perPhase.get(phase) ?? 0) + 1);
  }
  t.deepEqual(
    [...perPhase.entries()],
    ['evaluate (50% of max, paced)', 'evaluate (25% of max, paced)', 'bare Koa, paced at the same rate', 'bare Koa, paced as the 25% row'].map((phase) => [phase, Number(row(phase)!['2xx'])]),
  );

  const counted = /events stored \(SQL count afterwards\): (\d+); 2xx answers, each of which promised one: (\d+)/.exec(stdout);
  t.truthy(counted, stdout);
  t.is(Number(counted![1]), summary.eventsStored);
  t.true(Number(counted![1]) >= Number(counted![2]), counted![0]);
  t.true(stdout.includes('every step-up retry found its challenge'));
});

test('the benchmark refuses a load curve it cannot run, naming the variable', async (t) => {
  for (const curve of ['0', '25,abc', '150']) {
    const { code, stderr } = await runBench({ BENCH_CURVE: curve });
    t.not(code, 0, curve);
    t.true(stderr.includes(`BENCH_CURVE takes whole percents from 1 to 100, separated by commas, got "${curve}"`), stderr);
  }
});

test('the node flags of npm start are those between node and the file its script starts', (t) => {
  t.deepEqual(startFlags('node --use-largepages=silent dist/src/server.js'), ['--use-largepages=silent']);
  t.deepEqual(startFlags('node  dist/src/server.js '), []);
  t.throws(() => startFlags('tsx src/server.ts'), { message: /not "node \[flags\] file"/ });
});
