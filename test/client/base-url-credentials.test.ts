// A baseUrl with a user name and password: fetch refuses every request to it, with a message that
// quotes the password, which would become a network_error (a permanent fail open or closed) and
// land in TpsError.message and the synthetic failure. createClient refuses it at once instead,
// without quoting it. The TPS here is real, so the URL is right in every other respect.
import test from 'ava';
import { createClient } from '../../src/client/index.js';
import { startTps } from '../helpers/tps.js';
import { transactions } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
test.before(async () => {
  tps = await startTps();
});
test.after.always(async () => {
  await tps?.close();
});

test('a baseUrl carrying user:password@ is a TypeError at createClient that does not quote the password', async (t) => {
  const password = 'hunter2-s3cret';
  const url = new URL(tps.url);
  for (const credentials of [`tps:${password}`, password]) {
    const baseUrl = `${url.protocol}//${credentials}@${url.host}`;
    let thrown: unknown;
    let evaluated: unknown;
    try {
      const client = createClient({ baseUrl, secretKey: tps.secretKey, failureMode: 'open' });
      evaluated = await client.evaluate(transactions.allow());
    } catch (err) {
      thrown = err;
    }
    t.true(thrown instanceof TypeError, `createClient refused ${credentials.includes(':') ? 'user:password' : 'a user name'}; evaluate gave ${JSON.stringify(evaluated)}`);
    t.regex((thrown as Error).message, /user name or password/);
    t.false((thrown as Error).message.includes(password));
  }
  // The same TPS without credentials in the URL answers.
  const client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey });
  t.is((await client.evaluate(transactions.allow())).decision, 'allow');
});

test('a baseUrl that is no URL at all is refused without being quoted', (t) => {
  const error = t.throws(() => createClient({ baseUrl: 'http://tps:hunter2@[bad', secretKey: tps.secretKey }), { instanceOf: TypeError });
  t.false(error!.message.includes('hunter2'));
});
