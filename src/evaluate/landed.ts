import type { ReadEvent } from '../store/eventStore.js';

/**
 * Whether an event whose commit failed uncertainly is in the store after all: true or false as the
 * store says, a rejection when it cannot say (it failed, or did not answer within boundMs, so a
 * dead store does not hold the request long). Only true settles it: false is no proof that nothing
 * was stored (PostgreSQL may still commit a statement it has after the read), so commitFailed
 * answers false as it does a rejection.
 */
export type Landed = (environment: string, telemetryId: string) => Promise<boolean>;

// Long enough for a read on a loaded store, short against the request's own wait for the commit.
const LANDED_BOUND_MS = 2000;

export function landedIn(events: { find(environment: string, telemetryId: string): Promise<ReadEvent | undefined> }, boundMs = LANDED_BOUND_MS): Landed {
  return (environment, telemetryId) => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the store did not answer within ${boundMs} ms`)), boundMs);
    });
    return Promise.race([events.find(environment, telemetryId).then((event) => event !== undefined), bound]).finally(() => clearTimeout(timer));
  };
}
