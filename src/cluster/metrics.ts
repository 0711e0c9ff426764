import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import { primaryRequests } from './primaryRequests.js';

/**
 * `/metrics` with several workers (TPS_WORKERS > 1). A scrape reaches whichever worker node:cluster
 * hands its connection to, and one worker's counters alone would step back and forth from one
 * scrape to the next. So a worker's `/metrics` asks the primary, which gathers every worker's
 * registry through prom-client's AggregatorRegistry and answers with the sum (gauges by the
 * aggregator each declares): every scrape sees the whole service.
 */
type Request = { tps: 'metrics.get'; id: number };
type Reply = { tps: 'metrics.text'; id: number; text: string } | { tps: 'metrics.failed'; id: number; message: string };

const isRequest = (m: unknown): m is Request => (m as Request | undefined)?.tps === 'metrics.get';
const isReply = (m: unknown): m is Reply => {
  const tps = (m as Reply | undefined)?.tps;
  return tps === 'metrics.text' || tps === 'metrics.failed';
};

/** The primary's side: each worker's request answered with every worker's metrics, aggregated. */
export function aggregateWorkersMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, m: unknown) => {
    if (!isRequest(m)) return;
    aggregator.clusterMetrics().then(
      (text): Reply => ({ tps: 'metrics.text', id: m.id, text }),
      (err: unknown): Reply => ({ tps: 'metrics.failed', id: m.id, message: (err as Error)?.message ?? String(err) }),
    ).then((reply) => worker.isConnected() && worker.send(reply));
  });
}

/** A worker's side: `local` is what this worker gives the primary; the text is the whole service's. */
export function metricsThroughPrimary(local: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([local]);
  // Constructing one makes prom-client answer the primary's requests for this worker's metrics.
  new AggregatorRegistry();
  const ask = primaryRequests(isReply, (why) => new Error(`${why}: no metrics`));
  return async () => {
    const reply = await ask((id): Request => ({ tps: 'metrics.get', id }));
    if (reply.tps === 'metrics.failed') throw new Error(`the primary could not gather the workers' metrics: ${reply.message}`);
    return reply.text;
  };
}
