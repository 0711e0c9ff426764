import type { DecisionEvent } from '../api/types.js';
import type { StoredEvent } from '../store/eventStore.js';

/** An event as the API shows it: the store's seq stays inside (cursors carry it, opaquely). */
export type PublicEvent = DecisionEvent & { monitored: boolean };

export function toPublicEvent(e: StoredEvent): PublicEvent {
  const { seq: _seq, ...event } = e;
  return event;
}
