import type { Knex } from 'knex';
import type { Decision } from '../api/types.js';
import type { Catalog } from '../policy/catalog.js';
import { fromRow, type EventRow } from '../store/eventStore.js';
import { isConfigured, recover, redecide, SKIP_FAILED, SKIP_UNKNOWN_OPERATION } from './recorded.js';

export interface ReplayOptions {
  /** created_at bounds, epoch ms: since inclusive, until exclusive. */
  since?: number;
  until?: number;
  operation?: string;
  environment?: string;
  /** At most this many events are examined. */
  limit?: number;
  /** Rows read per query; memory stays at about one page whatever the store holds. */
  pageSize?: number;
  /** telemetryIds kept per transition (and per skip reason). */
  samples?: number;
}

export interface Transition {
  from: Decision;
  to: Decision;
  count: number;
  samples: string[];
}

export interface ReplayReport {
  configurationVersionId: string;
  examined: number;
  replayed: number;
  changed: number;
  unchanged: number;
  skipped: { reason: string; count: number; samples: string[] }[];
  /** Changed decisions only, most frequent first. */
  transitions: Transition[];
  /** from → to → count over every replayed event (the diagonal is the unchanged ones). */
  matrix: Record<string, Record<string, number>>;
  /** Replayed events that were monitored when recorded, and that the working tree would monitor. */
  monitored: { recorded: number; replayed: number };
  firstSeq?: number;
  lastSeq?: number;
}

/**
 * Re-decides stored events with `catalog` (the working tree's configuration), oldest first. Reads
 * the store one page at a time by seq (a keyset cursor), keeps only counts and a few samples, so a
 * million events take a page's worth of memory. Each event goes through the server's Evaluator
 * offline (recorded.ts), with the velocity count, advisory assessment and challenge state it met.
 */
export async function replay(knex: Knex, catalog: Catalog, options: ReplayOptions = {}, progress?: (examined: number) => void): Promise<ReplayReport> {
  const pageSize = options.pageSize ?? 500;
  const keep = options.samples ?? 5;
  const report: ReplayReport = {
    configurationVersionId: catalog.versionId,
    examined: 0,
    replayed: 0,
    changed: 0,
    unchanged: 0,
    skipped: [],
    transitions: [],
    matrix: {},
    monitored: { recorded: 0, replayed: 0 },
  };
  const transitions = new Map<string, Transition>();
  const skipped = new Map<string, ReplayReport['skipped'][number]>();
  const skip = (reason: string, telemetryId: string) => {
    let s = skipped.get(reason);
    if (!s) skipped.set(reason, (s = { reason, count: 0, samples: [] }));
    s.count++;
    if (s.samples.length < keep) s.samples.push(telemetryId);
  };

  let after = 0;
  for (;;) {
    const want = options.limit === undefined ? pageSize : Math.min(pageSize, options.limit - report.examined);
    if (want <= 0) break;
    const q = knex<EventRow>('events').where('seq', '>', after);
    if (options.since !== undefined) q.where('created_at', '>=', options.since);
    if (options.until !== undefined) q.where('created_at', '<', options.until);
    if (options.operation) q.where('operation_key', options.operation);
    if (options.environment) q.where('environment', options.environment);
    const rows: EventRow[] = await q.orderBy('seq', 'asc').limit(want);
    if (rows.length === 0) break;
    for (const row of rows) {
      const event = fromRow(row);
      after = event.seq;
      report.firstSeq ??= event.seq;
      report.lastSeq = event.seq;
      report.examined++;
      const recovered = recover(event);
      if (!recovered.ok) {
        skip(recovered.reason, event.telemetryId);
        continue;
      }
      if (!isConfigured(catalog, recovered.tx)) {
        skip(SKIP_UNKNOWN_OPERATION, event.telemetryId);
        continue;
      }
      let evaluation;
      try {
        evaluation = await redecide(catalog, recovered.tx);
      } catch (err) {
        // A malformed record must not stop a replay of a million: it is reported like any skip.
        skip(`${SKIP_FAILED}: ${(err as Error).message}`, event.telemetryId);
        continue;
      }
      const { response, event: replayed } = evaluation;
      report.replayed++;
      if (event.monitored) report.monitored.recorded++;
      if (replayed.monitored) report.monitored.replayed++;
      const from = event.decision;
      const to = response.decision;
      const row_ = (report.matrix[from] ??= {});
      row_[to] = (row_[to] ?? 0) + 1;
      if (from === to) {
        report.unchanged++;
        continue;
      }
      report.changed++;
      const key = `${from}\u0000${to}`;
      let t = transitions.get(key);
      if (!t) transitions.set(key, (t = { from, to, count: 0, samples: [] }));
      t.count++;
      if (t.samples.length < keep) t.samples.push(event.telemetryId);
    }
    progress?.(report.examined);
    if (rows.length < want) break;
  }
  report.transitions = [...transitions.values()].sort((a, b) => b.count - a.count || a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  report.skipped = [...skipped.values()].sort((a, b) => b.count - a.count);
  return report;
}
