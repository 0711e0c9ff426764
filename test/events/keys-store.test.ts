import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import knexFactory from 'knex';
import { runTps } from '../helpers/cliProcess.js';
import { freshDatabase, PG_BASE_URL } from '../helpers/tps.js';

// `tps keys list` and `keys revoke` take the store as it is (src/cli/readStore.ts): a misspelt
// DATABASE_URL is an error, not a new empty store that has no keys. `keys create` makes the store,
// as the server's first start would, so keys can be made before it. Errors go to stderr.

test.serial('keys list and keys revoke with no store at DATABASE_URL exit 1 on stderr, and create or migrate nothing', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-nokeys-'));
  const pg = freshDatabase('postgres');
  t.teardown(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await pg.drop();
  });
  const typo = path.join(dir, 'dta', 'tps.sqlite');
  const schema = new URL(pg.url).searchParams.get('schema')!;
  for (const [url, where] of [
    [`sqlite:${typo}`, `sqlite:${typo} (no such file)`],
    [pg.url, `postgres://${new URL(PG_BASE_URL).host}${new URL(PG_BASE_URL).pathname}?schema=${schema}`],
  ] as const) {
    for (const args of [['keys', 'list'], ['keys', 'list', '--json'], ['keys', 'revoke', 'key_0123']]) {
      const r = await runTps(args, { env: { DATABASE_URL: url } });
      t.is(r.code, 1, `${args.join(' ')} ${url}`);
      t.is(r.stdout, '', `${args.join(' ')} ${url}`);
      t.is(r.stderr, `tps: no TPS key store at ${where}: it has no api_keys table; is DATABASE_URL right?\n`);
    }
  }
  t.deepEqual(fs.readdirSync(dir), [], 'the misspelt path was created');
  const admin = knexFactory({ client: 'pg', connection: PG_BASE_URL, pool: { min: 0, max: 1 } });
  try {
    t.deepEqual(await admin('information_schema.schemata').where('schema_name', schema), [], 'the schema was migrated');
  } finally {
    await admin.destroy();
  }
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
