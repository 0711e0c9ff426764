import { readSettings } from '../config/env.js';
import { openDatabase, type Database } from '../store/db.js';

/**
 * The store named by DATABASE_URL, opened to read events (replay, to-fixture). Not migrated: a
 * review tool pointed at the wrong database must not create TPS's tables there and then report
 * "0 events" with success, so a store without an events table is an error. No checkpointer
 * either: the server writing the file checkpoints it.
 */
export async function openEventsToRead(): Promise<Database> {
  const db = await openDatabase(readSettings().databaseUrl, { migrate: false, checkpoint: false });
  try {
    if (!(await db.knex.schema.hasTable('events'))) throw new Error(`no TPS event store at ${db.describe}: it has no events table; is DATABASE_URL right?`);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}
