import type { KeyStore } from '../store/keyStore.js';
import { createKeyPair, pinKey, type KeyPair } from './keys.js';

/**
 * CONTRACT: pinned keys are registered (as hashes) for TPS_ENVIRONMENT; a first start on an empty
 * store without pinned keys creates `development` and its key pair, which the caller prints once.
 */
export async function bootstrapKeys(store: KeyStore, opts: { environment: string; secretKey?: string; publishableKey?: string }): Promise<KeyPair | undefined> {
  await store.ensureEnvironment(opts.environment);
  for (const key of [opts.secretKey, opts.publishableKey]) if (key) await pinKey(store, opts.environment, key);
  if (opts.secretKey || opts.publishableKey) return undefined;
  if ((await store.count()) > 0) return undefined;
  return createKeyPair(store, 'development', 'first start');
}
