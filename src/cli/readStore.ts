import fs from 'node:fs';
import { readSettings } from '../config/env.js';
import { isPostgresUrl, openDatabase, sqlitePath, type Database } from '../store/db.js';

/** The SQLite file DATABASE_URL names; undefined for PostgreSQL and for a database in memory. */
function sqliteFile(url: string | undefined): string | undefined {
  const file = url && isPostgresUrl(url) ? undefined : sqlitePath(url);
  return file === ':memory:' ? undefined : file;
}

const noStore = (where: string) => new Error(`no TPS event store at ${where}: it has no events table; is DATABASE_URL right?`);

/**
 * The store named by DATABASE_URL, opened to read events (events export, replay, to-fixture). Not
 * migrated: a review tool pointed at the wrong database must not create TPS's tables there and
 * then report "0 events" with success, so a store without an events table is an error, and so is
 * a SQLite file that does not exist (opening it would create it, and its folder). No checkpointer
 * either: the server writing the file checkpoints it.
 */
export async function openEventsToRead(): Promise<Database> {
  const url = readSettings().databaseUrl;
  const file = sqliteFile(url);
  if (file !== undefined && !fs.existsSync(file)) throw noStore(`sqlite:${file} (no such file)`);
  const db = await openDatabase(url, { migrate: false, checkpoint: false });
  try {
    if (!(await db.knex.schema.hasTable('events'))) throw noStore(db.describe);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}
