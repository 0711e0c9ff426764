import crypto from 'node:crypto';
import type { KeyRecord, KeyStore } from '../store/keyStore.js';
import { hashKey } from './keys.js';

export interface Principal {
  keyId: string;
  environment: string;
  kind: KeyRecord['kind'];
}

/**
 * Resolves presented keys to principals. Records are cached for `ttlMs` so the evaluate path does
 * not query the store per request; revocations made in this process apply at once, those made by
 * another process (the CLI, another worker) within `ttlMs`.
 *
 * One lookup per key at a time: otherwise, when a record expires, every request in flight queries
 * the store at once (~20 lookups a second at full load). Concurrent misses share one lookup, and a
 * record past half its `ttlMs` is looked up again in the background while it still serves, so under
 * steady traffic no request waits for the store.
 */
export class KeyRing {
  private readonly cache = new Map<string, { record: KeyRecord | undefined; loadedAt: number }>();
  private readonly loading = new Map<string, Promise<KeyRecord | undefined>>();
  /** Bumped by a revocation: a lookup that started before it must not cache what it read. */
  private generation = 0;

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
  ) {}

  async authenticate(key: string): Promise<Principal | undefined> {
    const hash = hashKey(key);
    const entry = this.cache.get(hash);
    const age = entry ? Date.now() - entry.loadedAt : Infinity;
    let record: KeyRecord | undefined;
    if (entry && age <= this.ttlMs) {
      record = entry.record;
      if (age > this.ttlMs / 2) this.load(hash).catch(() => undefined); // a failed refresh leaves the record until it expires
    } else {
      record = await this.load(hash);
    }
    if (!record || record.revokedAt !== null) return undefined;
    // The map lookup already matched; the explicit constant-time comparison keeps that true even if
    // the cache is ever swapped for a structure that compares digests byte by byte.
    if (!crypto.timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return { keyId: record.id, environment: record.environment, kind: record.kind };
  }

  /** The store's record for this hash, read once however many ask meanwhile; cached as of when the read began. */
  private load(hash: string): Promise<KeyRecord | undefined> {
    let pending = this.loading.get(hash);
    if (!pending) {
      const generation = this.generation;
      const loadedAt = Date.now();
      const read = this.store.findByHash(hash);
      const settled = () => {
        if (this.loading.get(hash) === pending) this.loading.delete(hash);
      };
      pending = read.then(
        (record) => {
          settled();
          if (generation === this.generation) {
            if (this.cache.size > 10_000) this.cache.clear();
            this.cache.set(hash, { record, loadedAt });
          }
          return record;
        },
        (err: unknown) => {
          settled();
          throw err;
        },
      );
      this.loading.set(hash, pending);
    }
    return pending;
  }

  async revoke(id: string): Promise<boolean> {
    const done = await this.store.revoke(id, Date.now());
    // Lookups in flight may have read the key before it was revoked: callers from now on start anew.
    this.generation++;
    this.loading.clear();
    for (const [hash, entry] of this.cache) if (entry.record?.id === id) this.cache.delete(hash);
    return done;
  }
}
