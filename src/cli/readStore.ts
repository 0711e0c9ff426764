import fs from 'node:fs';
import { readSettings } from '../config/env.js';
import { isPostgresUrl, openDatabase, sqlitePath, type Database } from '../store/db.js';
import { migrationLevel } from '../store/migrationLevel.js';

/** The SQLite file DATABASE_URL names; undefined for PostgreSQL and for a database in memory. */
function sqliteFile(url: string | undefined): string | undefined {
  const file = url && isPostgresUrl(url) ? undefined : sqlitePath(url);
  return file === ':memory:' ? undefined : file;
}

const noStore = (what: string, table: string, where: string) => new Error(`no TPS ${what} store at ${where}: it has no ${table} table; is DATABASE_URL right?`);

/**
 * The store named by DATABASE_URL, opened to read events (events export, replay, to-fixture). Not
 * migrated: a review tool pointed at the wrong database must not create TPS's tables there and
 * then report "0 events" with success, so a store without an events table is an error, and so is
 * a SQLite file that does not exist (opening it would create it, and its folder). No checkpointer
 * either: the server writing the file checkpoints it. A store an older TPS left behind lacks tables
 * and indexes the reads use: refused with one line, not a raw SQL error midway.
 */
export async function openEventsToRead(): Promise<Database> {
  const db = await openExistingStore('events', 'event');
  try {
    const level = await migrationLevel(db.knex);
    if (level.behind) throw new Error(`the store at ${db.describe} is at migration ${level.at ?? 'none'}; start a current TPS once to migrate it`);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}

/**
 * The store named by DATABASE_URL as it is, as openEventsToRead opens it; `table` must be there
 * (keys list and revoke: api_keys). `writes`: a SQLite file's WAL is checkpointed at close.
 */
export async function openExistingStore(table: string, what: string, { writes = false } = {}): Promise<Database> {
  const url = readSettings().databaseUrl;
  const file = sqliteFile(url);
  if (file !== undefined && !fs.existsSync(file)) throw noStore(what, table, `sqlite:${file} (no such file)`);
  const db = await openDatabase(url, { migrate: false, checkpoint: false });
  try {
    if (!(await db.knex.schema.hasTable(table))) throw noStore(what, table, db.describe);
  } catch (e) {
    await db.close();
    throw e;
  }
  return writes ? checkpointedAtClose(db) : db;
}

/**
 * SQLite never checkpoints on its own (wal_autocheckpoint=0, db.ts), and only a server runs the
 * checkpointer: with none running, and the file open elsewhere (an export, a shell), a write would
 * stay in the WAL, outside the database file a backup copies. It is copied back before closing
 * (PASSIVE: it never waits for a reader; a running server's checkpointer does the rest). PASSIVE
 * cannot copy what a reader's open snapshot still needs: when frames stay behind, stderr says so.
 */
export function checkpointedAtClose(db: Database): Database {
  if (db.dialect !== 'sqlite') return db;
  return {
    ...db,
    async close() {
      const rows = (await db.knex.raw('PRAGMA wal_checkpoint(PASSIVE)').catch(() => undefined)) as Array<{ busy: number; log: number; checkpointed: number }> | undefined;
      const result = Array.isArray(rows) ? rows[0] : undefined;
      if (result && result.log >= 0 && result.checkpointed < result.log) {
        process.stderr.write(
          `tps: note: ${result.log - result.checkpointed} of ${result.log} WAL frames are not yet in ${db.describe} (another connection is reading it); ` +
            'the write is saved in the -wal file beside it, which a copy of the database must include until the next checkpoint (a running TPS server makes one; so does the next tps keys write once no one is reading)\n',
        );
      }
      await db.close();
    },
  };
}
