import path from 'node:path';
import test from 'ava';
import { KEEPS_SCHEDSTAT, npmStartFlags } from '../../bench/proc.js';
import { runScript } from '../helpers/script.js';
import { REPO_ROOT } from '../helpers/tps.js';

// `npm run bench:compare` in its shortest form: one pair, A the server from source as it is, B the
// same with TPS_EVALUATE_THREAD=false. What is checked is that each side ran as configured and
// that every ratio is B's figure over A's from the same pair, not which side is faster.

test('bench:compare runs A and B alternately with their own settings and reports B over A per pair', async (t) => {
  const { code, stdout, stderr } = await runScript('bench/compare.ts', {
    BENCH_A_SERVER: path.join(REPO_ROOT, 'src/server.ts'),
    BENCH_B_SERVER: path.join(REPO_ROOT, 'src/server.ts'),
    // B's own node flags (BENCH_START_FLAGS), which its run names; `silent`: without large pages to be had, node goes on as usual.
    BENCH_B_ENV: 'TPS_EVALUATE_THREAD=false BENCH_START_FLAGS=--use-largepages=silent',
    BENCH_NODE_ARGS: '--import tsx',
    BENCH_PAIRS: '1',
    BENCH_PHASES: 'baseline,evaluate,ingest,half',
    BENCH_SECONDS: '1',
    BENCH_WARMUP_SECONDS: '1',
    BENCH_CONNECTIONS: '4',
    TPS_EVALUATE_THREAD: 'auto',
    // A small WAL, so that the 50% phase of a second holds catch-ups to report.
    TPS_SQLITE_WAL_MB: '0.0625',
  });
  t.is(code, 0, stderr);

  // Each run's header says where evaluate ran: A with auto (SQLite, so the thread), B in the HTTP thread.
  t.deepEqual(stderr.match(/evaluate in the (evaluation|HTTP) thread/g), ['evaluate in the evaluation thread', 'evaluate in the HTTP thread']);
  // A with `npm start`'s node flags, B with its own.
  t.deepEqual(stderr.match(/node flags [^;]+;/g), [`node flags ${npmStartFlags(REPO_ROOT).join(' ') || 'none'};`, 'node flags --use-largepages=silent;']);
  const summary = JSON.parse(stdout.trimEnd().split('\n').at(-1)!) as {
    pairs: number;
    b: string;
    pacedRate: number;
    metrics: Record<string, { a: number[]; b: number[]; ratios: number[]; medianRatio: number; bBetterIn: number }>;
  };
  t.is(summary.pairs, 1);
  t.true(summary.b.endsWith('TPS_EVALUATE_THREAD=false BENCH_START_FLAGS=--use-largepages=silent'), summary.b);
  t.true(summary.pacedRate > 0);
  // The core waits come from schedstat, which a kernel may not keep.
  t.deepEqual(Object.keys(summary.metrics), [
    'baselineRps',
    'evaluateRps',
    'evaluateRatio',
    'evaluateCpuUs',
    'evaluateSwitches',
    ...(KEEPS_SCHEDSTAT ? ['evaluateCoreWaitUs'] : []),
    'ingestRps',
    'ingestCpuUs',
    'halfLoadP99Ms',
    'halfLoadCpuUs',
    ...(KEEPS_SCHEDSTAT ? ['halfLoadCoreWaitUs'] : []),
    'halfLoadCatchUpMs',
    'halfLoadSlowestEvaluationMs',
    'halfLoadSlowestCommitMs',
  ]);
  for (const [key, m] of Object.entries(summary.metrics)) {
    t.true(m.a.length === 1 && m.b.length === 1 && m.a[0]! > 0 && m.b[0]! > 0, `${key}: ${JSON.stringify(m)}`);
    t.is(m.ratios[0], Math.round((m.b[0]! / m.a[0]!) * 1000) / 1000, key);
    t.is(m.medianRatio, m.ratios[0]);
  }
  // The table holds one row per run, A first.
  t.regex(stdout, /^\|\s+1 \|\s+A \|.*\n\|\s+1 \|\s+B \|/m);
});

test('bench:compare refuses to compare a build with itself', async (t) => {
  const { code, stderr } = await runScript('bench/compare.ts', { BENCH_A_ENV: '', BENCH_B_ENV: '', BENCH_A_SERVER: '', BENCH_B_SERVER: '' });
  t.is(code, 1);
  t.regex(stderr, /A and B are the same/);
});
