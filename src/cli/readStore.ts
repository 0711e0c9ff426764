import fs from 'node:fs';
import { readSettings } from '../config/env.js';
import { isPostgresUrl, openDatabase, sqlitePath, type Database } from '../store/db.js';

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
 * either: the server writing the file checkpoints it.
 */
export const openEventsToRead = (): Promise<Database> => openExistingStore('events', 'event');

/** The store named by DATABASE_URL as it is, as openEventsToRead opens it; `table` must be there (keys list and revoke: api_keys). */
export async function openExistingStore(table: string, what: string): Promise<Database> {
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
  return db;
}
