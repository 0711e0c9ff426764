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
 */
export class KeyRing {
  private readonly cache = new Map<string, { record: KeyRecord | undefined; loadedAt: number }>();

  constructor(
    private readonly store: KeyStore,
    private readonly ttlMs: number,
  ) {}

  async authenticate(key: string): Promise<Principal | undefined> {
    const hash = hashKey(key);
    const now = Date.now();
    let entry = this.cache.get(hash);
    if (!entry || now - entry.loadedAt > this.ttlMs) {
      entry = { record: await this.store.findByHash(hash), loadedAt: now };
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(hash, entry);
    }
    const record = entry.record;
    if (!record || record.revokedAt !== null) return undefined;
    // The map lookup already matched; the explicit constant-time comparison keeps that true even if
    // the cache is ever swapped for a structure that compares digests byte by byte.
    if (!crypto.timingSafeEqual(Buffer.from(record.hash, 'hex'), Buffer.from(hash, 'hex'))) return undefined;
    return { keyId: record.id, environment: record.environment, kind: record.kind };
  }

  async revoke(id: string): Promise<boolean> {
    const done = await this.store.revoke(id, Date.now());
    for (const [hash, entry] of this.cache) if (entry.record?.id === id) this.cache.delete(hash);
    return done;
  }
}
