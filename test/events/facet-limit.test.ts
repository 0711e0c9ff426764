import test from 'ava';
import { get, post, startTps, type StoreKind } from '../helpers/tps.js';
import { ingestRecord, query } from './helpers.js';

// Past both stores' limits on a statement's parameters (SQLite 32,766, PostgreSQL 65,535).
const FACETS = 70_000;

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] an identifier search with another filter finds its events when more facets match than a statement takes parameters`, async (t) => {
    const tps = await startTps({ store });
    try {
      // Facets with no event, as an environment that ingested that many operationKeys holds: one statement, no bound values to speak of.
      await tps.tps.db.knex.raw(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
         INSERT INTO event_facets (environment, operation_key, resource_type, decision, risk_band, source)
         SELECT ?, 'op_' || i, 'invoice', 'deny', '', 'ingest' FROM n`,
        [FACETS, tps.environment],
      );
      const match = ingestRecord({ actorId: 'u1', resourceId: 'r1', decision: 'deny' });
      const others = [ingestRecord({ actorId: 'u1', resourceId: 'r1', decision: 'allow' }), ingestRecord({ actorId: 'u2', resourceId: 'r2', decision: 'deny' })];
      for (const r of [match, ...others]) t.is((await post(`${tps.url}/api/events/ingest`, r, tps.secretKey)).status, 201);
      for (const params of [{ actorId: 'u1', decision: 'deny' }, { resourceId: 'r1', decision: 'deny' }, { actorId: 'u1', resourceType: 'invoice', source: 'ingest' }]) {
        const res = await get(`${tps.url}/api/events?${query(params)}`, tps.secretKey);
        t.is(res.status, 200, JSON.stringify(params));
        const found = (res.body as { events: { telemetryId: string }[] }).events.map((e) => e.telemetryId);
        t.deepEqual(found, params.decision ? [match.telemetryId] : [others[0]!.telemetryId, match.telemetryId], JSON.stringify(params));
      }
    } finally {
      await tps.close();
    }
  });
}
