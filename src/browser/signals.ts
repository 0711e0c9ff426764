// Human-signal capture: one passive, capture-phase listener per event type that stores the time
// of the latest trusted event. No key, coordinate or target is read; page-script events
// (isTrusted false) are ignored, so a script cannot fake activity by dispatching events.

import type { TabState } from './tab.js';

const EVENTS = ['pointerdown', 'pointermove', 'keydown', 'touchstart'] as const;

let listening = false;

export function captureSignals(tab: TabState): void {
  if (listening) return;
  listening = true;
  const note = (event: Event) => {
    if (event.isTrusted) tab.lastSignal = Date.now();
  };
  for (const type of EVENTS) addEventListener(type, note, { passive: true, capture: true });
}
