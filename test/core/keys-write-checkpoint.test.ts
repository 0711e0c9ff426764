import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import knexFactory from 'knex';
import { startScript } from '../helpers/script.js';

// SQLite never checkpoints on its own here (wal_autocheckpoint=0): the server's checkpointer does.
// With no server running and the file open elsewhere (an export, a shell), what `tps keys create`
// and `tps keys revoke` wrote stayed in the WAL, missing from the database file a backup copies.

const sqlite = (file: string) => knexFactory({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true, pool: { min: 1, max: 1 } });

async function tps(args: string[], databaseUrl: string): Promise<string> {
  const run = startScript('bin/tps.js', { DATABASE_URL: databaseUrl, TPS_ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }, args);
  const { code } = await run.exited;
  if (code !== 0) throw new Error(`tps ${args.join(' ')} exited ${code}: ${run.stderr}`);
  return run.stdout;
}

test('with no server running and the file open elsewhere, what keys create and keys revoke wrote is in the SQLite file itself', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-keys-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'tps.sqlite');
  const url = `sqlite:${file}`;
  const idOf = (printed: string) => /^secret key: .*\(id (\S+)\)$/m.exec(printed)![1]!;
  const first = idOf(await tps(['keys', 'create', '--env', 'first'], url));

  // Another process's connection on the file, idle.
  const other = sqlite(file);
  t.teardown(() => other.destroy());
  t.is((await other('api_keys').where({ id: first }).first('revoked_at')).revoked_at, null);

  const second = idOf(await tps(['keys', 'create', '--env', 'second'], url));
  await tps(['keys', 'revoke', first], url);

  // The database file alone, as a backup copies it.
  const copy = path.join(dir, 'copy.sqlite');
  fs.copyFileSync(file, copy);
  const backup = sqlite(copy);
  t.teardown(() => backup.destroy());
  const rows = (await backup('api_keys').select('id', 'environment', 'revoked_at')) as { id: string; environment: string; revoked_at: number | null }[];
  t.truthy(rows.find((r) => r.id === second), 'the key created is in the file');
  t.not(rows.find((r) => r.id === first)?.revoked_at ?? null, null, 'the revocation is in the file');
});

test('a keys write that a reader\'s open snapshot keeps out of the SQLite file says so on stderr', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-keys-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'tps.sqlite');
  const url = `sqlite:${file}`;
  await tps(['keys', 'create', '--env', 'first'], url);

  // Another process reading: its transaction's snapshot is older than the write to come.
  const other = sqlite(file);
  t.teardown(() => other.destroy());
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  let reading!: () => void;
  const read = new Promise<void>((r) => (reading = r));
  const reader = other.transaction(async (trx) => {
    await trx('api_keys').count({ n: '*' });
    reading();
    await done;
  });
  await read;

  const run = startScript('bin/tps.js', { DATABASE_URL: url, TPS_ENVIRONMENT: 'test', LOG_LEVEL: 'silent' }, ['keys', 'create', '--env', 'second']);
  const { code } = await run.exited;
  finish();
  await reader;
  t.is(code, 0, run.stderr);
  t.regex(run.stderr, /tps: note: \d+ of \d+ WAL frames are not yet in sqlite:.*another connection is reading it/);
});
