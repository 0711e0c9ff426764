// The cursors' secret lives in the store (src/store/serviceSecrets.ts), so that processes starting
// together (cluster workers, several servers on one store) and every later start use the same one.
import test from 'ava';
import { openDatabase, type Database } from '../../src/store/db.js';
import { serviceSecret } from '../../src/store/serviceSecrets.js';
import { freshDatabase } from '../helpers/tps.js';

for (const store of ['sqlite', 'postgres'] as const) {
  test(`[${store}] processes asking at once for a service secret agree on one, and it is kept`, async (t) => {
    const fresh = freshDatabase(store);
    const dbs: Database[] = [];
    t.teardown(async () => {
      for (const db of dbs) await db.close();
      await fresh.drop();
    });
    dbs.push(await openDatabase(fresh.url));
    for (let i = 0; i < 3; i++) dbs.push(await openDatabase(fresh.url, { migrate: false, checkpoint: false }));
    const secrets = await Promise.all(dbs.map((db) => serviceSecret(db.knex, 'cursor_test')));
    t.is(secrets[0]!.length, 32);
    for (const s of secrets) t.true(s.equals(secrets[0]!));
    t.is(Number((await dbs[0]!.knex('service_secrets').count({ n: '*' }))[0]!.n), 1);
    t.true((await serviceSecret(dbs[1]!.knex, 'cursor_test')).equals(secrets[0]!), 'kept');
    t.false((await serviceSecret(dbs[1]!.knex, 'another')).equals(secrets[0]!), 'one per name');
  });
}
