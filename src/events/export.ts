import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { EventFilter } from '../store/eventFilter.js';
import type { KnexEventStore } from '../store/eventStore.js';
import { toPublicEvent } from './publicEvent.js';

export interface ExportOptions {
  /** Events read per query. Memory holds one page, whatever the size of the export. */
  pageSize?: number;
}

/**
 * `tps events export`: the environment's matching events as NDJSON, oldest first. It walks the
 * store by seq one page at a time and waits for `out` to drain, so a slow consumer (a pipe to a
 * SIEM shipper) holds the export back instead of letting it buffer. Returns the number written.
 */
export async function exportEvents(
  store: Pick<KnexEventStore, 'page'>,
  environment: string,
  filter: EventFilter,
  out: Writable,
  options: ExportOptions = {},
): Promise<number> {
  const pageSize = options.pageSize ?? 1000;
  let after = 0;
  let written = 0;
  for (;;) {
    const page = await store.page(environment, filter, { order: 'asc', after, limit: pageSize });
    for (const e of page) {
      written++;
      if (!out.write(`${JSON.stringify(toPublicEvent(e))}\n`)) await once(out, 'drain');
    }
    if (page.length < pageSize) return written;
    after = page[page.length - 1]!.seq;
  }
}
