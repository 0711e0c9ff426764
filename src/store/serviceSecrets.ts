import crypto from 'node:crypto';
import type { Knex } from 'knex';

/**
 * The service's secret of this name (service_secrets, migration 006): 32 random bytes, made by the
 * first process to ask and kept. Insert-or-ignore, then read back, so processes starting together
 * (cluster workers, several servers on one store) agree, and a restart keeps it.
 */
export async function serviceSecret(knex: Knex, name: string): Promise<Buffer> {
  const read = async () => ((await knex('service_secrets').where({ name }).first('value')) as { value: Buffer } | undefined)?.value;
  // Read first: once it exists, a start takes no write lock (SQLite's cluster workers start together).
  let value = await read();
  if (value === undefined) {
    await knex('service_secrets').insert({ name, value: crypto.randomBytes(32) }).onConflict('name').ignore();
    value = await read();
  }
  if (value === undefined || value.length !== 32) throw new Error(`the store's service secret "${name}" is missing or not 32 bytes`);
  return Buffer.from(value);
}
