import type { LoggedEvent } from '../api/types.js';
import type { ReadEvent } from '../store/eventStore.js';

/** An event as the API shows it: the store's seq stays inside (cursors carry it, opaquely). */
export type PublicEvent = LoggedEvent & { monitored: boolean };

export function toPublicEvent(e: ReadEvent): PublicEvent {
  const { seq: _seq, ...event } = e;
  return event;
}
