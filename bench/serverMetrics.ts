/**
 * What the server says of itself on /metrics, read before and after a benchmark phase: where an
 * answer's time goes beyond its own CPU (commits, checkpoints, garbage collection, a blocked event
 * loop). With several workers a scrape is the whole service's (src/cluster/metrics.ts): the
 * commits are the workers' round trips to the primary, the checkpoints the primary's, and the GC
 * share the sum of every process's main thread. The figures are left unrounded: the table formats them.
 */

/** One scrape: every sample by its full name with labels, e.g. `tps_event_commit_seconds_bucket{le="0.001"}`. */
export type Scrape = Map<string, number>;

export async function scrape(url: string): Promise<Scrape> {
  try {
    return parseMetrics(await (await fetch(`${url}/metrics`)).text());
  } catch {
    /* not TPS (or gone): every figure below comes out NaN */
    return new Map();
  }
}

/** Prometheus text as a Scrape. */
export function parseMetrics(text: string): Scrape {
  const samples: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

export interface PhaseFigures {
  /** Events per group-commit transaction. */
  perCommit: number;
  /** Mean and p99 of a commit's duration, ms; the p99 is the upper bound of its histogram bucket. */
  commitMeanMs: number;
  commitP99Ms: number;
  /** SQLite checkpoints per second and their mean duration, ms (NaN on PostgreSQL). */
  checkpointsPerS: number;
  checkpointMeanMs: number;
  /** Share of the phase the main (HTTP) thread spent in garbage collection, %. */
  gcPct: number;
  /** The same for the evaluation thread, % (NaN where evaluations run in the HTTP thread). */
  threadGcPct: number;
  /**
   * How late the event loop ran at p99 over the phase, ms. prom-client samples the loop every
   * 10 ms and records the whole interval, so the minimum (the interval itself) is taken off.
   */
  loopP99Ms: number;
}

const delta = (a: Scrape, b: Scrape, name: string) => (b.get(name) ?? NaN) - (a.get(name) ?? NaN);
/** The sum over every label set of a metric; NaN where the server has no such metric (the bare Koa baseline). */
export function sumOf(s: Scrape, prefix: string): number {
  const values = [...s].filter(([k]) => k.startsWith(prefix)).map(([, v]) => v);
  return values.length ? values.reduce((a, b) => a + b, 0) : NaN;
}

/** The smallest bucket bound (ms) under which a share q of the phase's observations fall. */
function bucketQuantileMs(a: Scrape, b: Scrape, histogram: string, q: number): number {
  const buckets = [...b.keys()]
    .filter((k) => k.startsWith(`${histogram}_bucket{`))
    .map((k) => ({ le: Number(/le="([^"]+)"/.exec(k)?.[1]), count: delta(a, b, k) }))
    .sort((x, y) => x.le - y.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (!total) return NaN;
  const hit = buckets.find((x) => x.count >= q * total);
  return hit ? hit.le * 1000 : NaN;
}

export function phaseFigures(before: Scrape, after: Scrape, seconds: number): PhaseFigures {
  const commits = delta(before, after, 'tps_event_commit_seconds_count');
  const checkpoints = delta(before, after, 'tps_sqlite_checkpoint_seconds_count');
  const gcSeconds = sumOf(after, 'tps_nodejs_gc_duration_seconds_sum') - sumOf(before, 'tps_nodejs_gc_duration_seconds_sum');
  const threadGcSeconds = sumOf(after, 'tps_evaluation_thread_gc_seconds_total') - sumOf(before, 'tps_evaluation_thread_gc_seconds_total');
  return {
    perCommit: delta(before, after, 'tps_event_commit_batch_size_sum') / delta(before, after, 'tps_event_commit_batch_size_count'),
    commitMeanMs: (delta(before, after, 'tps_event_commit_seconds_sum') / commits) * 1000,
    commitP99Ms: bucketQuantileMs(before, after, 'tps_event_commit_seconds', 0.99),
    checkpointsPerS: checkpoints / seconds,
    checkpointMeanMs: (delta(before, after, 'tps_sqlite_checkpoint_seconds_sum') / checkpoints) * 1000,
    gcPct: (gcSeconds / seconds) * 100,
    threadGcPct: (threadGcSeconds / seconds) * 100,
    // The lag histogram starts over at every scrape, so the one after the phase covers the phase.
    loopP99Ms: ((after.get('tps_nodejs_eventloop_lag_p99_seconds') ?? NaN) - (after.get('tps_nodejs_eventloop_lag_min_seconds') ?? NaN)) * 1000,
  };
}
