import type { ExecutionContext } from 'ava';
import type { StoredChallenge } from '../../src/state/challenges.js';
import { openState, type State } from '../../src/state/open.js';
import { dropRedisPrefix, REDIS_TEST_URL, unique } from './tps.js';

/** The state of one kind, in the process or in the real Redis under a prefix of its own: closed, and the prefix's keys dropped, when the test ends. */
export function stateOf(kind: 'memory' | 'redis', t: ExecutionContext, prefix = `tps-test:${unique()}:`): State {
  const state = openState(kind === 'redis' ? REDIS_TEST_URL : undefined, prefix);
  t.teardown(async () => {
    await state.close();
    if (kind === 'redis') await dropRedisPrefix(prefix);
  });
  return state;
}

/** A passkey challenge of environment 'test' for `fingerprint`, with an id of its own, living `lifeMs` from `nowMs`. */
export function storedChallenge(fingerprint: string, nowMs: number, lifeMs = 600_000): StoredChallenge {
  const id = `ch_${unique()}`;
  return { id, type: 'passkey', fingerprint, environment: 'test', score: 60, band: 'medium', reasons: ['missing_recent_human_signal'], telemetryId: `tel_${id}`, expiresAt: nowMs + lifeMs };
}
