import crypto from 'node:crypto';
import type { KeyKind, KeyRecord, KeyStore } from '../store/keyStore.js';

export const SECRET_PREFIX = 'svc_sec_';
export const PUBLISHABLE_PREFIX = 'svc_pub_';

/** The key of an `authorization: Bearer …` header, or undefined when it has none. */
export const bearerKey = (header: string): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];

export const prefixOf = (kind: KeyKind): string => (kind === 'secret' ? SECRET_PREFIX : PUBLISHABLE_PREFIX);

export function kindOf(key: string): KeyKind | undefined {
  if (key.startsWith(SECRET_PREFIX)) return 'secret';
  if (key.startsWith(PUBLISHABLE_PREFIX)) return 'publishable';
  return undefined;
}

// Keys are 192 random bits, so a plain SHA-256 is a sound one-way store; no salt or KDF needed.
export const hashKey = (key: string): string => crypto.createHash('sha256').update(key).digest('hex');

export function newKeyRecord(environment: string, kind: KeyKind, key: string, label: string | null = null): KeyRecord {
  return {
    id: `key_${crypto.randomBytes(8).toString('hex')}`,
    environment,
    kind,
    hash: hashKey(key),
    hint: `${key.slice(0, prefixOf(kind).length)}…${key.slice(-4)}`,
    label,
    createdAt: Date.now(),
    revokedAt: null,
  };
}

export const generateKey = (kind: KeyKind): string => prefixOf(kind) + crypto.randomBytes(24).toString('base64url');

export interface KeyPair {
  environment: string;
  secretKey: string;
  publishableKey: string;
  secret: KeyRecord;
  publishable: KeyRecord;
}

/** Creates an environment's key pair; the plain keys exist only in the returned object. */
export async function createKeyPair(store: KeyStore, environment: string, label: string | null = null): Promise<KeyPair> {
  await store.ensureEnvironment(environment);
  const secretKey = generateKey('secret');
  const publishableKey = generateKey('publishable');
  const secret = newKeyRecord(environment, 'secret', secretKey, label);
  const publishable = newKeyRecord(environment, 'publishable', publishableKey, label);
  await store.insert(secret);
  await store.insert(publishable);
  return { environment, secretKey, publishableKey, secret, publishable };
}

/** Registers a pinned key (TPS_SECRET_KEY / TPS_PUBLISHABLE_KEY) for an environment. */
export async function pinKey(store: KeyStore, environment: string, key: string): Promise<KeyRecord> {
  const kind = kindOf(key);
  if (!kind) throw new Error(`a pinned key must begin with ${SECRET_PREFIX} or ${PUBLISHABLE_PREFIX}`);
  await store.ensureEnvironment(environment);
  const record = await store.upsertByHash(newKeyRecord(environment, kind, key, 'pinned'));
  if (record.environment !== environment) throw new Error(`the pinned ${kind} key belongs to environment "${record.environment}", not "${environment}"`);
  if (record.revokedAt !== null) throw new Error(`the pinned ${kind} key ${record.id} has been revoked`);
  return record;
}
