import test from 'ava';
import { runTps } from '../helpers/cli.js';
import { noStores } from '../helpers/noStore.js';
import { freshDatabase } from '../helpers/tps.js';

// `tps keys list` and `keys revoke` take the store as it is (src/cli/readStore.ts): a misspelt
// DATABASE_URL is an error, not a new empty store that has no keys. `keys create` makes the store,
// as the server's first start would, so keys can be made before it. Errors go to stderr.

test.serial('keys list and keys revoke with no store at DATABASE_URL exit 1 on stderr, and create or migrate nothing', async (t) => {
  const stores = noStores(t);
  for (const [url, where] of stores.urls) {
    for (const args of [['keys', 'list'], ['keys', 'list', '--json'], ['keys', 'revoke', 'key_0123']]) {
      const r = await runTps(args, { env: { DATABASE_URL: url } });
      t.is(r.code, 1, `${args.join(' ')} ${url}`);
      t.is(r.stdout, '', `${args.join(' ')} ${url}`);
      t.is(r.stderr, `tps: no TPS key store at ${where}: it has no api_keys table; is DATABASE_URL right?\n`);
    }
  }
  await stores.untouched();
});

test.serial('keys create makes the store; list and revoke then use it; revoking a key twice errs on stderr only', async (t) => {
  const fresh = freshDatabase('sqlite');
  t.teardown(fresh.drop);
  const env = { DATABASE_URL: fresh.url };
  const created = await runTps(['keys', 'create', '--env', 'production'], { env });
  t.is(created.code, 0, created.stderr);
  const id = /secret key: +svc_sec_\S+ +\(id (key_\S+)\)/.exec(created.stdout)?.[1];
  t.truthy(id, created.stdout);

  const listed = await runTps(['keys', 'list', '--json'], { env });
  t.is(listed.code, 0, listed.stderr);
  t.deepEqual((JSON.parse(listed.stdout) as { environment: string; kind: string }[]).map((k) => [k.environment, k.kind]).sort(), [
    ['production', 'publishable'],
    ['production', 'secret'],
  ]);

  const revoked = await runTps(['keys', 'revoke', id!], { env });
  t.is(revoked.code, 0, revoked.stderr);
  t.is(revoked.stdout, `revoked ${id}\n`);

  const again = await runTps(['keys', 'revoke', id!], { env });
  t.is(again.code, 1);
  t.is(again.stdout, '');
  t.is(again.stderr, `tps: no active key with id ${id}\n`);
});
