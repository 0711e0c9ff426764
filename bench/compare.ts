import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PhaseSplit, SplitMs } from './split.js';
import { readRun, type RunOutput } from './table.js';

/**
 * `npm run bench:compare`: two builds or two settings through `bench/run.ts`, alternated in pairs
 * (A B, then B A, so a machine that drifts during the runs favours neither), with every figure read
 * as B against A within its pair. On a VM whose throughput moves ±15% between identical runs, a
 * difference is only worth believing when it holds across pairs; this prints how many it held in.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Side {
  name: 'A' | 'B';
  server: string;
  env: Record<string, string>;
}

/** `KEY=value KEY2=value2`, as BENCH_A_ENV and BENCH_B_ENV take them. */
function parseEnv(name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (process.env[name] ?? '').split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`${name} takes KEY=value pairs separated by spaces, got "${pair}"`);
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

function side(name: 'A' | 'B'): Side {
  const server = path.resolve(process.env[`BENCH_${name}_SERVER`] || path.join(ROOT, 'dist/src/server.js'));
  return { name, server, env: parseEnv(`BENCH_${name}_ENV`) };
}

const describe = (s: Side) => [path.relative(ROOT, s.server) || s.server, ...Object.entries(s.env).map(([k, v]) => `${k}=${v}`)].join(' ');

// The paced phase's row: the first run paces at half its own maximum, the others at that rate.
const FULL = ['evaluate (mix, max rate)'];
const PACED = ['evaluate (50% of max, paced)', 'evaluate (fixed rate, paced)'];
const INGEST = ['ingest (max rate)'];
const BASELINE = ['baseline (bare Koa)'];

/** A figure from the table: the first of `phases` that ran, its `column`, read by `parse`. */
const cell =
  (phases: readonly string[], column: string, parse: (text: string) => number = Number.parseFloat) =>
  (run: RunOutput): number | undefined => {
    const row = phases.map((phase) => run.rows.get(phase)).find(Boolean);
    return row?.[column] === undefined ? undefined : parse(row[column]!);
  };
/** A part of the 50% phase's slowest 1%, from the JSON's split (bench/split.ts). */
const slowest = (part: Exclude<keyof SplitMs, 'duringCommit'>) => (run: RunOutput) => (run.summary.evaluateHalfLoadSplitMs as PhaseSplit | null | undefined)?.slowest[part];

/** The figures compared, where each is read from, and which way is better. */
const METRICS = [
  // With the baseline among the phases, and flags that reach it too (BENCH_START_FLAGS).
  { key: 'baselineRps', label: 'bare Koa req/s', read: cell(BASELINE, 'req/s'), higherIsBetter: true },
  { key: 'evaluateRps', label: 'evaluate req/s', read: cell(FULL, 'req/s'), higherIsBetter: true },
  { key: 'evaluateRatio', label: 'evaluateRatio', read: (run: RunOutput) => (run.summary.evaluateRatio as number | null | undefined) ?? undefined, higherIsBetter: true },
  { key: 'evaluateCpuUs', label: 'evaluate CPU µs/answer', read: cell(FULL, 'server CPU µs/req'), higherIsBetter: false },
  { key: 'evaluateSwitches', label: 'evaluate switches/answer', read: cell(FULL, 'switches/req'), higherIsBetter: false },
  { key: 'evaluateCoreWaitUs', label: 'evaluate core wait µs/answer', read: cell(FULL, 'core wait µs/req'), higherIsBetter: false },
  { key: 'ingestRps', label: 'ingest req/s', read: cell(INGEST, 'req/s'), higherIsBetter: true },
  { key: 'ingestCpuUs', label: 'ingest CPU µs/answer', read: cell(INGEST, 'server CPU µs/req'), higherIsBetter: false },
  { key: 'halfLoadP99Ms', label: '50% p99 ms', read: cell(PACED, 'p99 ms'), higherIsBetter: false },
  { key: 'halfLoadCpuUs', label: '50% CPU µs/answer', read: cell(PACED, 'server CPU µs/req'), higherIsBetter: false },
  { key: 'halfLoadCoreWaitUs', label: '50% core wait µs/answer', read: cell(PACED, 'core wait µs/req'), higherIsBetter: false },
  // "2 × 4.87": the catch-up's mean, what the commits queued behind it waited for.
  { key: 'halfLoadCatchUpMs', label: '50% catch-up ms', read: cell(PACED, 'checkpoints/s × ms', (text) => Number.parseFloat(text.split('×')[1] ?? '')), higherIsBetter: false },
  { key: 'halfLoadSlowestEvaluationMs', label: '50% slowest 1%: evaluation ms', read: slowest('evaluation'), higherIsBetter: false },
  { key: 'halfLoadSlowestCommitMs', label: '50% slowest 1%: commit ms', read: slowest('commit'), higherIsBetter: false },
] as const;
type Figures = Partial<Record<(typeof METRICS)[number]['key'], number>>;

function runOnce(s: Side, env: Record<string, string>): Promise<Figures> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/run.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...env, BENCH_SERVER: s.server, ...s.env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`the run of ${s.name} (${describe(s)}) failed with exit code ${code}`));
      const run = readRun(stdout);
      const figures: Figures = {};
      for (const m of METRICS) {
        const value = m.read(run);
        if (value !== undefined && Number.isFinite(value)) figures[m.key] = value;
      }
      resolve(figures);
    });
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;

async function main(): Promise<void> {
  const pairs = Number(process.env.BENCH_PAIRS || 5);
  if (!Number.isInteger(pairs) || pairs < 1) throw new Error(`BENCH_PAIRS must be a whole number >= 1, got "${process.env.BENCH_PAIRS}"`);
  const [a, b] = [side('A'), side('B')];
  if (describe(a) === describe(b)) throw new Error('A and B are the same: set BENCH_B_SERVER (another build’s dist/src/server.js) or BENCH_B_ENV (e.g. "TPS_EVALUATE_THREAD=false")');
  const phases = process.env.BENCH_PHASES || 'evaluate,half';
  log(`comparing, ${pairs} pair(s) of ${phases}:\n  A: ${describe(a)}\n  B: ${describe(b)}`);

  // Every run's 50% phase at one rate: the first run's half maximum, unless one is given.
  let pacedRate = process.env.BENCH_PACED_RATE || '';
  const runs: { pair: number; side: Side; figures: Figures }[] = [];
  for (let pair = 1; pair <= pairs; pair++) {
    for (const s of pair % 2 ? [a, b] : [b, a]) {
      log(`pair ${pair}, ${s.name}:`);
      const figures = await runOnce(s, { BENCH_PHASES: phases, ...(pacedRate ? { BENCH_PACED_RATE: pacedRate } : {}) });
      if (!pacedRate && figures.evaluateRps) pacedRate = String(Math.round(figures.evaluateRps / 2));
      runs.push({ pair, side: s, figures });
    }
  }

  const measured = METRICS.filter((m) => runs.every((r) => r.figures[m.key] !== undefined));
  const head = ['pair', 'side', ...measured.map((m) => m.label)];
  const body = runs.map((r) => [String(r.pair), r.side.name, ...measured.map((m) => String(r.figures[m.key]))]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  const out = [`A: ${describe(a)}`, `B: ${describe(b)}`, `50% phase paced at ${pacedRate || '-'} req/s`, line(head), `|${widths.map((w) => `${'-'.repeat(w + 1)}:`).join('|')}|`, ...body.map(line), ''];

  const metrics: Record<string, { a: number[]; b: number[]; ratios: number[]; medianRatio: number; bBetterIn: number }> = {};
  for (const m of measured) {
    const of = (name: 'A' | 'B') => runs.filter((r) => r.side.name === name).map((r) => r.figures[m.key]!);
    const [av, bv] = [of('A'), of('B')];
    const ratios = av.map((x, i) => round(bv[i]! / x));
    const bBetterIn = ratios.filter((r) => (m.higherIsBetter ? r > 1 : r < 1)).length;
    metrics[m.key] = { a: av, b: bv, ratios, medianRatio: round(median(ratios)), bBetterIn };
    out.push(`${m.label}: B/A ${ratios.join(', ')} (median ${round(median(ratios))}); B better in ${bBetterIn} of ${pairs} pair(s)`);
  }
  process.stdout.write(`${out.join('\n')}\n${JSON.stringify({ pairs, a: describe(a), b: describe(b), pacedRate: pacedRate ? Number(pacedRate) : null, metrics })}\n`);
}

main().catch((err) => {
  process.stderr.write(`bench:compare failed: ${(err as Error).message}\n`);
  process.exit(1);
});
