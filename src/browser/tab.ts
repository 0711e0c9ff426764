// Per-tab state (tab id and last human signal) that survives reloads and same-tab navigation
// but NOT tab duplication.
//
// Why this works: a browser copies sessionStorage into a duplicated tab (and into a window.open
// popup), so a tab id kept there would be cloned. We therefore take the id OUT of sessionStorage
// as soon as the page loads, and put it back only on `pagehide`, when this page is leaving.
// A reload or navigation in the same tab finds it again; a duplicate made while the page is
// open finds nothing and mints its own id. Restored from the back/forward cache, the page takes
// it out again. If pagehide never fires (crash, killed mobile tab) the tab simply gets a new id,
// which only lowers continuity.

import { isId, randomId, read, write } from './storage.js';

const KEY = 'svc:tab';

export interface TabState {
  id: string;
  /** True when the id came from an earlier page load in this same tab. */
  continued: boolean;
  /** Epoch ms of the latest trusted pointer, keyboard or touch event, if any. */
  lastSignal?: number;
}

let tab: TabState | undefined;

export function currentTab(): TabState {
  if (tab) return tab;
  let saved: { t?: unknown; h?: unknown } | undefined;
  try {
    saved = JSON.parse(read('sessionStorage', KEY) ?? 'null') ?? undefined;
  } catch {
    saved = undefined;
  }
  write('sessionStorage', KEY, null);
  // Any script of the origin can write here. A tab id must look like ours (it becomes a header
  // value), and a signal time must be a past instant: a later one would count as fresh until the
  // clock caught up, and one outside Date's range made prepare() throw in toISOString.
  const h = saved?.h;
  const state: TabState = isId(saved?.t)
    ? { id: saved.t, continued: true, lastSignal: typeof h === 'number' && h >= 0 && h <= Date.now() ? h : undefined }
    : { id: randomId(), continued: false };
  addEventListener('pagehide', () => write('sessionStorage', KEY, JSON.stringify({ t: state.id, h: state.lastSignal })));
  addEventListener('pageshow', (event) => {
    if (event.persisted) write('sessionStorage', KEY, null);
  });
  return (tab = state);
}
