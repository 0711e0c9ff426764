import test from 'ava';
import { generateKey, hashKey, pinKey } from '../../src/auth/keys.js';
import { openDatabase, type Database } from '../../src/store/db.js';
import { KnexKeyStore } from '../../src/store/keyStore.js';
import { freshDatabase, type StoreKind } from '../helpers/tps.js';

// Races of two processes' start-ups; each is likelier than not to meet between look-up and insert.
const RACES = 20;

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] two processes pinning the same key at once both start, with the one stored record`, async (t) => {
    const fresh = freshDatabase(store);
    const opened: Database[] = [];
    try {
      // Two processes' stores over one database, each with its own connections.
      opened.push(await openDatabase(fresh.url));
      opened.push(await openDatabase(fresh.url));
      const [a, b] = opened.map((db) => new KnexKeyStore(db.knex, db.reader));
      for (let i = 0; i < RACES; i++) {
        const key = generateKey(i % 2 ? 'publishable' : 'secret');
        const [first, second] = await Promise.all([pinKey(a!, 'production', key), pinKey(b!, 'production', key)]);
        t.is(first.id, second.id);
        const rows = await opened[0]!.knex('api_keys').where({ hash: hashKey(key) });
        t.is(rows.length, 1);
      }
    } finally {
      for (const db of opened) await db.close();
      await fresh.drop();
    }
  });
}
