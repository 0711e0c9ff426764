import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { Counter, Gauge, Registry } from 'prom-client';
import { aggregateWorkersMetrics, metricsThroughPrimary } from '../../src/cluster/metrics.js';
import { parseMetrics } from '../../bench/serverMetrics.js';

/**
 * A real node:cluster for metrics.test.ts: this file runs as the primary, gathering the metrics of
 * its one worker and its own (src/cluster/metrics.ts), and as that worker, whose registry can be
 * made to fail. The worker exits 1 on any failed check (or if a scrape ends it); the primary exits
 * with the worker's code.
 */
const registry = () => {
  const r = new Registry();
  new Counter({ name: 'tps_test_answers_total', help: 'one per process', registers: [r] }).inc();
  return r;
};

if (cluster.isPrimary) {
  aggregateWorkersMetrics(registry(), () => Object.values(cluster.workers!).filter((w) => w !== undefined));
  cluster.fork().on('exit', (code) => process.exit(code ?? 1));
} else {
  let broken = false;
  const local = registry();
  new Gauge({
    name: 'tps_test_collected',
    help: 'fails to collect while broken',
    registers: [local],
    collect() {
      if (broken) throw new Error('the collector broke');
      this.set(1);
    },
  });
  const metricsText = metricsThroughPrimary(local);
  const answers = async () => parseMetrics(await metricsText()).get('tps_test_answers_total');

  // The worker's counter and the primary's, added up.
  assert.equal(await answers(), 2);
  // A registry that fails fails the scrape, saying why, and leaves the worker running.
  broken = true;
  await assert.rejects(metricsText(), /could not gather the workers' metrics: a worker could not collect its metrics: the collector broke/);
  broken = false;
  assert.equal(await answers(), 2);
  process.exit(0);
}
