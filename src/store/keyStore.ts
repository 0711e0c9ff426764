import type { Knex } from 'knex';

export type KeyKind = 'secret' | 'publishable';

export interface KeyRecord {
  id: string;
  environment: string;
  kind: KeyKind;
  hash: string;
  hint: string;
  label: string | null;
  createdAt: number;
  revokedAt: number | null;
}

/** Keys and environments as stored: only hashes of keys ever reach the database. */
export interface KeyStore {
  ensureEnvironment(name: string): Promise<void>;
  insert(record: KeyRecord): Promise<void>;
  /** Inserts unless a key with this hash exists; returns the stored record either way. */
  upsertByHash(record: KeyRecord): Promise<KeyRecord>;
  findByHash(hash: string): Promise<KeyRecord | undefined>;
  list(): Promise<KeyRecord[]>;
  revoke(id: string, at: number): Promise<boolean>;
  count(): Promise<number>;
}

interface Row {
  id: string;
  environment: string;
  kind: KeyKind;
  hash: string;
  hint: string;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

const toRecord = (r: Row): KeyRecord => ({
  id: r.id,
  environment: r.environment,
  kind: r.kind,
  hash: r.hash,
  hint: r.hint,
  label: r.label,
  createdAt: Number(r.created_at),
  revokedAt: r.revoked_at === null ? null : Number(r.revoked_at),
});

const toRow = (k: KeyRecord): Row => ({
  id: k.id,
  environment: k.environment,
  kind: k.kind,
  hash: k.hash,
  hint: k.hint,
  label: k.label,
  created_at: k.createdAt,
  revoked_at: k.revokedAt,
});

export class KnexKeyStore implements KeyStore {
  /** `reader` serves findByHash, so a key lookup never queues behind a commit on SQLite's writer (Database.reader). */
  constructor(
    private readonly knex: Knex,
    private readonly reader: Knex = knex,
  ) {}

  async ensureEnvironment(name: string): Promise<void> {
    await this.knex('environments').insert({ name, created_at: Date.now() }).onConflict('name').ignore();
  }

  async insert(record: KeyRecord): Promise<void> {
    await this.knex('api_keys').insert(toRow(record));
  }

  async upsertByHash(record: KeyRecord): Promise<KeyRecord> {
    const existing = await this.findByHash(record.hash);
    if (existing) return existing;
    // Another process may pin the same key between the look-up and the insert (several starting at
    // once): the unique hash lets one row in, and each reads the row that won.
    await this.knex('api_keys').insert(toRow(record)).onConflict('hash').ignore();
    return toRecord((await this.knex<Row>('api_keys').where({ hash: record.hash }).first())!);
  }

  async findByHash(hash: string): Promise<KeyRecord | undefined> {
    const row = await this.reader<Row>('api_keys').where({ hash }).first();
    return row ? toRecord(row) : undefined;
  }

  async list(): Promise<KeyRecord[]> {
    const rows = await this.knex<Row>('api_keys').select('*').orderBy([{ column: 'environment' }, { column: 'created_at' }]);
    return rows.map(toRecord);
  }

  async revoke(id: string, at: number): Promise<boolean> {
    const n = await this.knex('api_keys').where({ id }).whereNull('revoked_at').update({ revoked_at: at });
    return n > 0;
  }

  async count(): Promise<number> {
    const row = await this.knex('api_keys').count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }
}
