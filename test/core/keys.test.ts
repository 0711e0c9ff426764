import anyTest, { type TestFn } from 'ava';
import { createKeyPair } from '../../src/auth/keys.js';
import { KeyRing } from '../../src/auth/keyring.js';
import type { KeyStore } from '../../src/store/keyStore.js';
import { post, startTps, type RunningTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// How the key cache (TPS_KEY_CACHE_MS) reaches the store: over real HTTP, counting the lookups the
// store actually ran.
const test = anyTest as TestFn<{ long: RunningTps; short: RunningTps }>;
const SHORT_TTL_MS = 800;

test.before(async (t) => {
  t.context.long = await startTps({ env: { TPS_KEY_CACHE_MS: '60000' } });
  t.context.short = await startTps({ env: { TPS_KEY_CACHE_MS: String(SHORT_TTL_MS) } });
});
test.after.always(async (t) => {
  await t.context.long?.close();
  await t.context.short?.close();
});

/** Counts the key lookups (SELECTs on api_keys by hash) the service's store runs. */
function lookups(running: RunningTps): { count(): number } {
  let n = 0;
  const { reader, knex } = running.tps.db;
  for (const k of new Set([reader, knex])) k.on('query', (q: { sql: string }) => void (/from [`"]api_keys[`"] where [`"]hash[`"]/i.test(q.sql) && n++));
  return { count: () => n };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test.serial('concurrent requests with a key not yet cached share one lookup', async (t) => {
  const tps = t.context.long;
  const pair = await createKeyPair(tps.tps.keyStore, 'burst');
  const counter = lookups(tps);
  const answers = await Promise.all(Array.from({ length: 24 }, () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), pair.secretKey)));
  t.deepEqual(
    answers.map((a) => a.status),
    answers.map(() => 200),
  );
  t.is(counter.count(), 1);
  for (let i = 0; i < 5; i++) t.is((await post(`${tps.url}/api/evaluate`, samples.createCustomer(), pair.secretKey)).status, 200);
  t.is(counter.count(), 1, 'served from the cache');
});

test.serial('past half its time a key is looked up again in the background; a revocation by another process applies within TPS_KEY_CACHE_MS', async (t) => {
  const tps = t.context.short;
  const pair = await createKeyPair(tps.tps.keyStore, 'refresh');
  const counter = lookups(tps);
  const evaluate = () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), pair.secretKey);
  t.is((await evaluate()).status, 200);
  t.is(counter.count(), 1);
  await sleep(SHORT_TTL_MS / 2 + 150);
  t.is((await evaluate()).status, 200);
  for (let i = 0; i < 50 && counter.count() < 2; i++) await sleep(10);
  t.is(counter.count(), 2);

  // Written to the store only, as the CLI or another worker would: this process's cache is not told.
  t.true(await tps.tps.keyStore.revoke(pair.secret.id, Date.now()));
  await sleep(SHORT_TTL_MS + 100);
  t.is((await evaluate()).status, 401);
});

test.serial('a lookup that read a key before it was revoked in process does not cache it', async (t) => {
  const store = t.context.long.tps.keyStore;
  const pair = await createKeyPair(store, 'race');
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held = 0;
  // The real store, with the first lookup's answer held back until the revocation has happened.
  const slow: KeyStore = Object.assign(Object.create(store) as KeyStore, {
    findByHash: async (hash: string) => {
      const record = await store.findByHash(hash);
      if (held++ === 0) await gate;
      return record;
    },
  });
  const ring = new KeyRing(slow, 60_000);
  const first = ring.authenticate(pair.secretKey);
  for (let i = 0; i < 100 && held === 0; i++) await sleep(5);
  t.is(held, 1);
  t.true(await ring.revoke(pair.secret.id));
  release();
  t.truthy(await first, 'it began before the revocation');
  t.is(await ring.authenticate(pair.secretKey), undefined);
  t.is(held, 2, 'looked up again, not served from what the first lookup read');
});
