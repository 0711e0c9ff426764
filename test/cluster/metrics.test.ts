import test from 'ava';
import { runScript } from '../helpers/script.js';

// The whole service's /metrics under TPS_WORKERS (src/cluster/metrics.ts), over a real
// node:cluster's channel: metricsCluster.ts runs as the primary and its worker.
test("a worker's metrics reach every scrape through the primary, and a registry that fails fails the scrape without ending the worker", async (t) => {
  const { code, stderr } = await runScript('test/cluster/metricsCluster.ts');
  t.is(code, 0, stderr);
});
