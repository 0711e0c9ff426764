import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { answerWorkers, isMessage, primaryRequests } from './primaryRequests.js';

/**
 * `/metrics` with several workers (TPS_WORKERS > 1). A scrape reaches whichever worker node:cluster
 * hands its connection to, and one worker's counters alone would step back and forth from one
 * scrape to the next. So a worker's `/metrics` asks the primary, which collects every worker's
 * registry and its own (with SQLite it is the writer: its checkpoints are there) and adds them up
 * with prom-client's AggregatorRegistry (gauges by the aggregator each declares): every scrape
 * sees the whole service.
 */

/** One registry's metrics, as prom-client hands them between processes. */
type Metrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;
type Get = { tps: 'metrics.get'; id: number };
type Text = { tps: 'metrics.text'; id: number; text: string } | { tps: 'metrics.failed'; id: number; message: string };
type Collect = { tps: 'metrics.collect'; id: number };
type Collected = { tps: 'metrics.collected'; id: number; metrics: Metrics } | { tps: 'metrics.uncollected'; id: number; message: string };

const isGet = isMessage<Get>('metrics.get');
const isText = isMessage<Text>('metrics.text', 'metrics.failed');
const isCollect = isMessage<Collect>('metrics.collect');
const isCollected = isMessage<Collected>('metrics.collected', 'metrics.uncollected');

/** A worker that does not answer in this long fails the scrape rather than leaving it out. */
const COLLECT_TIMEOUT_MS = 5000;

/**
 * The primary's side: each worker's request answered with the metrics of every worker that
 * `serving` lists (one still starting has none to give) and `own`, aggregated.
 */
export function aggregateWorkersMetrics(own: Registry, serving: () => Worker[]): void {
  // Collections under way, by id: the workers yet to answer, and what the others sent.
  const collecting = new Map<number, { waiting: Set<Worker>; metrics: Map<Worker, Metrics>; done(): void; fail(why: string): void }>();
  // The counters and histograms of workers that exited, as each last sent them: still summed, or a
  // worker's death would step the service's counters back, a reset to Prometheus (whose rate() then
  // counts the other workers' whole totals again). Folded into one as they come, so crashes cannot pile up.
  const lastSent = new Map<Worker, Metrics>();
  let retired: Promise<Metrics | undefined> = Promise.resolve(undefined);
  const retire = (worker: Worker) => {
    const last = lastSent.get(worker)?.filter((m) => m.aggregator === 'sum' && ['counter', 'histogram'].includes(String(m.type)));
    lastSent.delete(worker);
    if (last) retired = retired.then((sum) => (sum ? fold(sum, last) : last));
  };
  // A fold that fails keeps what it had: one dead worker's counts lost, never every later scrape.
  const fold = (sum: Metrics, last: Metrics): Promise<Metrics> =>
    Promise.resolve()
      .then(() => AggregatorRegistry.aggregate([sum, last]).getMetricsAsJSON())
      .catch(() => sum);
  let nextId = 0;
  const collect = (workers: Worker[]) =>
    new Promise<Metrics[]>((resolve, reject) => {
      const id = nextId++;
      const end = () => {
        clearTimeout(timer);
        collecting.delete(id);
      };
      const entry = {
        waiting: new Set(workers),
        metrics: new Map<Worker, Metrics>(),
        done() {
          end();
          const live = [...entry.metrics.values()];
          void retired.then((sum) => resolve(sum ? [...live, sum] : live), reject);
        },
        fail(why: string) {
          end();
          reject(new Error(why));
        },
      };
      const timer = setTimeout(() => entry.fail(`${entry.waiting.size} worker(s) did not answer in ${COLLECT_TIMEOUT_MS} ms`), COLLECT_TIMEOUT_MS);
      collecting.set(id, entry);
      for (const w of workers) w.send({ tps: 'metrics.collect', id } satisfies Collect);
      if (workers.length === 0) entry.done();
    });

  // A worker that exits is no longer waited for; what it last sent counts as retired (once).
  cluster.on('exit', (worker) => {
    retire(worker);
    for (const entry of collecting.values()) {
      entry.metrics.delete(worker);
      if (entry.waiting.delete(worker) && entry.waiting.size === 0) entry.done();
    }
  });
  cluster.on('message', (worker, m: unknown) => {
    if (!isCollected(m)) return;
    const entry = collecting.get(m.id);
    if (!entry?.waiting.delete(worker)) return;
    if (m.tps === 'metrics.uncollected') return entry.fail(`a worker could not collect its metrics: ${m.message}`);
    entry.metrics.set(worker, m.metrics);
    lastSent.set(worker, m.metrics);
    if (entry.waiting.size === 0) entry.done();
  });
  answerWorkers(
    isGet,
    async (m): Promise<Text> => {
      const metrics = await collect(serving().filter((w) => w.isConnected()));
      // The primary's own last: a gauge aggregated as `first` is then a worker's, which set it.
      const text = await AggregatorRegistry.aggregate([...metrics, await own.getMetricsAsJSON()]).metrics();
      return { tps: 'metrics.text', id: m.id, text };
    },
    (m, message): Text => ({ tps: 'metrics.failed', id: m.id, message }),
  );
}

/** A worker's side: `local` is what this worker gives the primary; the text is the whole service's. */
export function metricsThroughPrimary(local: Registry): () => Promise<string> {
  // A registry that fails (a collect callback throwing) fails the scrape at once, as it would in
  // one process, rather than after the primary's timeout, or as a rejection that ends the worker.
  process.on('message', (m: unknown) => {
    if (!isCollect(m)) return;
    void local
      .getMetricsAsJSON()
      .then(
        (metrics): Collected => ({ tps: 'metrics.collected', id: m.id, metrics }),
        (err: unknown): Collected => ({ tps: 'metrics.uncollected', id: m.id, message: (err as Error)?.message ?? String(err) }),
      )
      .then((reply) => process.connected && process.send!(reply));
  });
  const ask = primaryRequests(isText, (why) => new Error(`${why}: no metrics`));
  return async () => {
    const reply = await ask((id): Get => ({ tps: 'metrics.get', id }));
    if (reply.tps === 'metrics.failed') throw new Error(`the primary could not gather the workers' metrics: ${reply.message}`);
    return reply.text;
  };
}
