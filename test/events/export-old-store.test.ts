// `tps events export` reads a store as it is and never migrates it: one that an older TPS left
// behind (here migrated up to 004) lacks what the reads use, and is refused with one clear line
// before anything is read, not a raw SQL error midway.
import test from 'ava';
import { openDatabase, sqlitePath } from '../../src/store/db.js';
import { toRow } from '../../src/store/eventStore.js';
import { migrationSource } from '../../src/store/migrations.js';
import { reasonKeys } from '../../src/store/reasonIndex.js';
import { runCli } from '../helpers/cli.js';
import { freshDatabase } from '../helpers/tps.js';
import { generateEvents } from './helpers.js';

const UP_TO_003 = ['001_core', '002_event_search', '003_operations'];
const UP_TO_004 = [...UP_TO_003, '004_event_facets'];

test.serial('export on a SQLite store migrated only up to 004 exits 1 with one line naming its migration, and leaves it as it was', async (t) => {
  const store = freshDatabase('sqlite');
  t.teardown(() => store.drop());
  const db = await openDatabase(store.url, { migrate: false, checkpoint: false });
  try {
    for (const name of UP_TO_003) await db.knex.migrate.up({ migrationSource, name });
    // Events as a TPS of that time stored them; 004 gives them their facets.
    for (const e of generateEvents('test', 30, Date.now() - 60_000)) {
      const [row] = await db.knex('events').insert(toRow(e)).returning('seq');
      for (const key of reasonKeys(e.environment, e.reasons)) await db.knex('event_reasons').insert({ key, seq: Number((row as { seq: number }).seq) });
    }
    await db.knex.migrate.up({ migrationSource, name: '004_event_facets' });
  } finally {
    await db.close();
  }
  const file = sqlitePath(store.url);

  for (const filter of [['--actorId', 'actor_3'], ['--decision', 'deny'], []]) {
    const r = await runCli(['events', 'export', '--env', 'test', ...filter], { DATABASE_URL: store.url, LOG_LEVEL: 'silent' });
    t.is(r.code, 1, filter.join(' '));
    t.is(r.stdout, '');
    t.is(r.stderr, `tps: the store at sqlite:${file} is at migration 004; start a current TPS once to migrate it\n`);
  }

  const after = await openDatabase(store.url, { migrate: false, checkpoint: false });
  try {
    t.deepEqual(
      (await after.knex('knex_migrations').select('name').orderBy('id')).map((r: { name: string }) => r.name),
      UP_TO_004,
      'not migrated',
    );
  } finally {
    await after.close();
  }
});
