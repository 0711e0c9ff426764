import test from 'ava';
import { post, startTps } from '../helpers/tps.js';
import { ingestRecord } from './helpers.js';

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] an ingest the store cannot commit is a 503 store_unavailable with retry-after, and the retry then stores it`, async (t) => {
    const tps = await startTps({ store });
    t.teardown(() => tps.close());
    const knex = tps.tps.db.knex;
    const record = ingestRecord();
    // Away for real, as an outage takes it: the driver's own error reaches the route.
    await knex.schema.renameTable('events', 'events_away');
    let res;
    try {
      res = await post(`${tps.url}/api/events/ingest`, record, tps.secretKey);
    } finally {
      await knex.schema.renameTable('events_away', 'events');
    }
    t.is(res.status, 503);
    t.is(res.body.error.code, 'store_unavailable');
    t.is(res.headers.get('retry-after'), '1');
    t.is((await post(`${tps.url}/api/events/ingest`, record, tps.secretKey)).status, 201);
  });
}
