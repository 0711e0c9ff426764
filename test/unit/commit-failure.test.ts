import net from 'node:net';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import knexFactory from 'knex';
import { PrimaryCommitError } from '../../src/cluster/eventCommits.js';
import { surelyNotCommitted } from '../../src/store/commitFailure.js';
import { freshDatabase, PG_BASE_URL } from '../helpers/tps.js';

// Whether a failed commit's evaluation may put its challenge back hangs on this: the errors are
// provoked from real stores, so the classification follows what the drivers actually throw.

const failure = async (work: () => Promise<unknown>): Promise<unknown> => {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('the work did not fail');
};

test('SQLite refusing a statement wrote nothing', async (t) => {
  const db = freshDatabase('sqlite');
  const knex = knexFactory({ client: 'sqlite3', connection: { filename: db.url.slice('sqlite:'.length) }, useNullAsDefault: true });
  t.teardown(async () => {
    await knex.destroy();
    await db.drop();
  });
  t.true(surelyNotCommitted(await failure(() => knex.raw('INSERT INTO missing_table VALUES (1)'))));
});

test('PostgreSQL answering with an error wrote nothing; a connection cut mid-statement may have', async (t) => {
  const url = new URL(PG_BASE_URL);
  const direct = knexFactory({ client: 'pg', connection: PG_BASE_URL, pool: { min: 0, max: 1 } });
  t.teardown(() => direct.destroy());
  t.true(surelyNotCommitted(await failure(() => direct.raw('INSERT INTO missing_table VALUES (1)'))));

  // A proxy that drops the connection while the statement runs: the client cannot know its outcome.
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const server = net.connect(Number(url.port || 5432), url.hostname);
    sockets.add(client).add(server);
    client.pipe(server).pipe(client);
    client.on('error', () => undefined);
    server.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  const port = (proxy.address() as AddressInfo).port;
  const atPort = (p: number) => Object.assign(new URL(PG_BASE_URL), { host: `127.0.0.1:${p}` }).toString();
  const cut = knexFactory({ client: 'pg', connection: atPort(port), pool: { min: 0, max: 1 } });
  t.teardown(() => cut.destroy());
  await cut.raw('SELECT 1');
  const running = failure(() => cut.raw('SELECT pg_sleep(5)'));
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const s of sockets) s.destroy();
  t.false(surelyNotCommitted(await running));

  // Nothing listening: nothing was sent.
  proxy.close();
  const refused = knexFactory({ client: 'pg', connection: atPort(port), pool: { min: 0, max: 1 }, acquireConnectionTimeout: 2000 });
  t.teardown(() => refused.destroy());
  t.true(surelyNotCommitted(await failure(() => refused.raw('SELECT 1'))));
});

test('a worker knows its batch was not committed when the primary says so, not when the primary went away with it', (t) => {
  t.true(surelyNotCommitted(new PrimaryCommitError('the primary could not commit the batch: no such table', 'SQLITE_ERROR')));
  t.false(surelyNotCommitted(new PrimaryCommitError('the primary went away; the batch may not be committed', undefined, true)));
});
