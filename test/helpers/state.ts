import type { ExecutionContext } from 'ava';
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
