import test from 'ava';
import { post, startTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// Every 503 says when to come back: an evaluation whose event the store refused (a commit, where
// the store's reads already carried it) is an outage to wait out like state_unavailable's. The store
// is made to fail for real (its events table renamed away), in each thread that can evaluate.

for (const thread of [true, false]) {
  test(`[sqlite, ${thread ? 'evaluation thread' : 'HTTP thread'}] 503 store_unavailable for a refused commit carries retry-after: 1`, async (t) => {
    const tps = await startTps({ env: { TPS_EVALUATE_THREAD: String(thread) } });
    t.teardown(() => tps.close());
    t.is(Boolean(tps.tps.evaluationThread), thread);
    const knex = tps.tps.db.knex;
    await knex.schema.renameTable('events', 'events_away');
    const res = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
    await knex.schema.renameTable('events_away', 'events');
    t.is(res.status, 503);
    t.is(res.body.error.code, 'store_unavailable');
    t.is(res.headers.get('retry-after'), '1');
  });
}
