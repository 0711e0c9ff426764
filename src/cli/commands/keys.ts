import { readSettings } from '../../config/env.js';
import { createKeyPair } from '../../auth/keys.js';
import { openDatabase } from '../../store/db.js';
import { KnexKeyStore } from '../../store/keyStore.js';
import { checkpointedAtClose, openExistingStore } from '../readStore.js';
import { envOption, out, UsageError, type Command } from '../command.js';

/**
 * `create` opens the store as the server does, creating and migrating it, so keys can be made
 * before a first start. `list` and `revoke` take it as it is: a misspelt DATABASE_URL must not
 * create a store and answer "no keys" (or "no such key") from it. What `create` and `revoke` write
 * is in the SQLite file itself when they exit, server running or not (checkpointedAtClose).
 */
async function withKeyStore<T>(fn: (store: KnexKeyStore) => Promise<T>, { create = false, writes = false } = {}): Promise<T> {
  const db = create ? checkpointedAtClose(await openDatabase(readSettings().databaseUrl)) : await openExistingStore('api_keys', 'key', { writes });
  try {
    return await fn(new KnexKeyStore(db.knex));
  } finally {
    await db.close();
  }
}

const create: Command = {
  words: ['keys', 'create'],
  usage: 'keys create --env NAME [--label TEXT]',
  summary: 'create an environment key pair and print it once',
  options: { env: { type: 'string' }, label: { type: 'string' } },
  async run({ values }) {
    const env = envOption(values.env);
    if (!env) throw new UsageError('--env NAME is required');
    const pair = await withKeyStore((store) => createKeyPair(store, env, (values.label as string | undefined) ?? null), { create: true });
    out(`environment:     ${pair.environment}`);
    out(`secret key:      ${pair.secretKey}   (id ${pair.secret.id})`);
    out(`publishable key: ${pair.publishableKey}   (id ${pair.publishable.id})`);
    out('The keys are shown only now: TPS keeps their hashes.');
    return 0;
  },
};

const list: Command = {
  words: ['keys', 'list'],
  usage: 'keys list [--json]',
  summary: 'list keys (ids, environments, hints; never the keys)',
  options: { json: { type: 'boolean' } },
  async run({ values }) {
    const keys = await withKeyStore((store) => store.list());
    const rows = keys.map((k) => ({
      id: k.id,
      environment: k.environment,
      kind: k.kind,
      hint: k.hint,
      label: k.label,
      createdAt: new Date(k.createdAt).toISOString(),
      revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
    }));
    if (values.json) out(JSON.stringify(rows, null, 2));
    else for (const r of rows) out(`${r.id}  ${r.environment.padEnd(16)} ${r.kind.padEnd(11)} ${r.hint.padEnd(16)} ${r.revokedAt ? `revoked ${r.revokedAt}` : 'active'}`);
    return 0;
  },
};

const revoke: Command = {
  words: ['keys', 'revoke'],
  usage: 'keys revoke ID',
  positionals: ['ID'],
  summary: 'revoke a key; running servers refuse it within TPS_KEY_CACHE_MS',
  async run({ positionals }) {
    const id = positionals[0];
    if (!id) throw new UsageError('usage: tps keys revoke ID');
    const done = await withKeyStore((store) => store.revoke(id, Date.now()), { writes: true });
    // An error, so on stderr, as every command's.
    if (!done) throw new Error(`no active key with id ${id}`);
    out(`revoked ${id}`);
    return 0;
  },
};

export default [create, list, revoke];
