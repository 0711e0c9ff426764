// TPS answers, and its body then stalls: a real TCP proxy in front of a real TPS forwards a 4xx's
// status and headers and holds the body back, so the client's timeout fires while reading it. The
// status had arrived, and it decides: a 429 (the key's quota, TPS_KEY_RATE_LIMIT_PER_MINUTE=1)
// never fails open, and a 4xx other than 429 (here a wrong key's 401) always throws.
import test from 'ava';
import { createClient, isTpsError } from '../../src/client/index.js';
import { generateKey } from '../../src/auth/keys.js';
import { startTps } from '../helpers/tps.js';
import { transactions } from './fixtures.js';
import { stallingProxy, type StallingProxy } from './stalling-proxy.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let proxy: StallingProxy;

test.before(async () => {
  tps = await startTps({ env: { TPS_KEY_RATE_LIMIT_PER_MINUTE: '1' } });
  proxy = await stallingProxy(tps.url);
});
test.after.always(async () => {
  await proxy?.close();
  await tps?.close();
});

test.serial('a 429 whose body stalls fails closed under failureMode open, keeping its status', async (t) => {
  const client = createClient({ baseUrl: proxy.url, secretKey: tps.secretKey, failureMode: 'open', timeoutMs: 1_500 });
  // The quota is one call a minute; the count is estimated, so call until TPS refuses one.
  for (let call = 0; call < 10 && !proxy.stalled.includes(429); call++) {
    const before = proxy.stalled.length;
    const result = await client.evaluate(transactions.allow());
    if (proxy.stalled.length === before) continue;
    t.is(proxy.stalled.at(-1), 429);
    t.is(result.decision, 'deny', 'a 429 never fails open');
    t.true(result.synthetic);
    t.is(result.failure?.status, 429);
    t.is(result.failure?.code, 'timeout');
  }
  t.true(proxy.stalled.includes(429), 'TPS refused a call with 429');
});

test.serial('a 401 whose body stalls throws under failureMode open rather than failing open', async (t) => {
  const client = createClient({ baseUrl: proxy.url, secretKey: generateKey('secret'), failureMode: 'open', timeoutMs: 1_500 });
  const error = await t.throwsAsync(client.evaluate(transactions.allow()));
  t.true(isTpsError(error));
  t.like(error, { status: 401, code: 'timeout', unavailable: false });
  t.is(proxy.stalled.at(-1), 401);
});
