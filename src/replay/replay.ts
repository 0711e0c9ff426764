import type { Knex } from 'knex';
import type { Decision } from '../api/types.js';
import { DEFAULT_CHALLENGE_TTL_MS } from '../evaluate/offline.js';
import type { Catalog } from '../policy/catalog.js';
import { fromRow, type EventRow, type StoredEvent } from '../store/eventStore.js';
import { unconfigured, UNREADABLE_ROW, type Answer } from './noDecision.js';
import { changedParts, OUTCOME_PARTS, recordedParts, replayedParts, type OutcomePart } from './outcome.js';
import { SKIP_INGESTED } from './recorded.js';
import { Replayer, type Again } from './replayer.js';

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
  /** How long a challenge lives when its recorded event gives no expiry (the server's TPS_CHALLENGE_TTL_SECONDS). */
  challengeTtlMs?: number;
}

/** A changed answer: `to` is a decision, or none (noDecision.ts), and then `detail` says why. */
export interface Transition {
  from: Decision;
  to: Answer;
  count: number;
  samples: string[];
  detail?: string;
}

/** One part of the answer other than the decision, changed from one value to another. */
export interface OutcomeChange {
  part: OutcomePart;
  from: string;
  to: string;
  count: number;
  samples: string[];
}

export interface ReplayReport {
  configurationVersionId: string;
  examined: number;
  /** Every examined event but the skipped: re-decided, or answered with no decision (a change). */
  replayed: number;
  changed: number;
  unchanged: number;
  /** Events with nothing to compare (ingested, or recorded without the inputs a policy reads): not changes. */
  skipped: { reason: string; count: number; samples: string[] }[];
  /**
   * Changed answers only, most frequent first: decision to decision, or to no decision
   * (unknown_operation, not_redecided) with its detail.
   */
  transitions: Transition[];
  /**
   * Replayed events whose decision stays but whose answer otherwise changes: the challenge type,
   * the redaction (fields or strategy), retryAfterSeconds or the risk band.
   */
  outcomeChanged: number;
  /** Those changes part by part, most frequent first (an event may change several parts). */
  outcomeChanges: OutcomeChange[];
  /** Replayed events evaluated with a velocity count rebuilt from the stored events (none recorded, or counted over another window). */
  rebuiltCounts: number;
  /**
   * Satisfied retries recorded without a velocity count (stored before retries were held to TPS's
   * window, or under a policy without one) that the working tree held to its window, with a
   * rebuilt count: what the current code decides for them, reported as any change is. `changed`
   * of them changed decision (samples: those).
   */
  retriesNowChecked: { count: number; changed: number; samples: string[] };
  /** from → to (a decision or no decision) → count over every replayed event (the diagonal is the unchanged ones). */
  matrix: Record<string, Record<string, number>>;
  /** Replayed events that were monitored when recorded, and that the working tree would monitor. */
  monitored: { recorded: number; replayed: number };
  firstSeq?: number;
  lastSeq?: number;
}

/** The created_at bounds and filters of the rows read. */
type Selection = Pick<ReplayOptions, 'since' | 'until' | 'operation' | 'environment'>;

/** The selected rows oldest first, a page at a time by seq (a keyset cursor), at most `limit` of them. */
async function* pagesOf(knex: Knex, where: Selection, pageSize: number, limit = Infinity): AsyncGenerator<EventRow[]> {
  let after = 0;
  for (let left = limit; left > 0; ) {
    const want = Math.min(pageSize, left);
    const q = knex<EventRow>('events').where('seq', '>', after);
    if (where.since !== undefined) q.where('created_at', '>=', where.since);
    if (where.until !== undefined) q.where('created_at', '<', where.until);
    if (where.operation) q.where('operation_key', where.operation);
    if (where.environment) q.where('environment', where.environment);
    const rows: EventRow[] = await q.orderBy('seq', 'asc').limit(want);
    if (rows.length === 0) return;
    yield rows;
    after = Number(rows[rows.length - 1]!.seq);
    left -= rows.length;
    if (rows.length < want) return;
  }
}

/**
 * Re-decides stored events with `catalog` (the working tree's configuration), oldest first. Reads
 * the store one page at a time by seq (a keyset cursor), keeps only counts and a few samples, so a
 * million events take a page's worth of memory. Each event goes through the server's Evaluator
 * offline (recorded.ts) with the advisory assessment it met, TPS's velocity count (the recorded one
 * while it fits the working tree's window, else rebuilt from the events: velocity.ts), and the
 * challenges the replay's own evaluations issued, so a retry is answered as it would be live. An
 * event of an operation the working tree does not configure for its environment changes to
 * unknown_operation (the live 422), and one that cannot be decided again to not_redecided; only
 * events with nothing to compare (ingested, no recorded inputs) are skipped.
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
    outcomeChanged: 0,
    outcomeChanges: [],
    rebuiltCounts: 0,
    retriesNowChecked: { count: 0, changed: 0, samples: [] },
    matrix: {},
    monitored: { recorded: 0, replayed: 0 },
  };
  const transitions = new Map<string, Transition>();
  const outcomeChanges = new Map<string, OutcomeChange>();
  const skipped = new Map<string, ReplayReport['skipped'][number]>();
  const sample = (samples: string[], telemetryId: string) => samples.length < keep && samples.push(telemetryId);
  const skip = (reason: string, telemetryId: string) => {
    let s = skipped.get(reason);
    if (!s) skipped.set(reason, (s = { reason, count: 0, samples: [] }));
    s.count++;
    sample(s.samples, telemetryId);
  };
  const answered = (from: Decision, to: Answer, telemetryId: string, detail?: string) => {
    report.replayed++;
    const row = (report.matrix[from] ??= {});
    row[to] = (row[to] ?? 0) + 1;
    if (from === to) return;
    report.changed++;
    const key = `${from}\u0000${to}\u0000${detail ?? ''}`;
    let t = transitions.get(key);
    if (!t) transitions.set(key, (t = { from, to, count: 0, samples: [], ...(detail === undefined ? {} : { detail }) }));
    t.count++;
    sample(t.samples, telemetryId);
  };
  const where: Selection = { since: options.since, until: options.until, operation: options.operation, environment: options.environment };
  const challengeTtlMs = options.challengeTtlMs ?? DEFAULT_CHALLENGE_TTL_MS;
  const replayer = new Replayer(knex, catalog, challengeTtlMs);

  if (options.since !== undefined) {
    // The first events must meet the counts and challenges they met live: the events before --since
    // as far back as a count (two windows: the counter's previous bucket) or a challenge reaches are
    // decided too, and not reported.
    const back = 2 * replayer.velocity.longestWindow() * 1000 + challengeTtlMs;
    for await (const rows of pagesOf(knex, { ...where, since: options.since - back, until: options.since }, pageSize)) {
      for (const row of rows) {
        try {
          await replayer.again(fromRow(row));
        } catch {
          // Before --since, nothing is reported; in range, such an event is not_redecided.
        }
      }
    }
  }

  for await (const rows of pagesOf(knex, where, pageSize, options.limit)) {
    for (const row of rows) {
      const seq = Number(row.seq);
      report.firstSeq ??= seq;
      report.lastSeq = seq;
      report.examined++;
      let event: StoredEvent;
      let again: Again | { failed: string };
      // An unreadable row or a failed re-decision must not stop a replay of a million. Its answer is
      // unknown, so it is a change (not_redecided), not a skip: a gate cannot call it unchanged.
      try {
        event = fromRow(row);
      } catch {
        if (row.source === 'ingest') skip(SKIP_INGESTED, row.telemetry_id);
        else answered(row.decision as Decision, 'not_redecided', row.telemetry_id, UNREADABLE_ROW);
        continue;
      }
      try {
        again = await replayer.again(event);
      } catch (err) {
        again = { failed: err instanceof Error ? err.message : String(err) };
      }
      if ('skip' in again) {
        skip(again.skip, event.telemetryId);
        continue;
      }
      if (event.monitored) report.monitored.recorded++;
      if ('failed' in again) {
        answered(event.decision, 'not_redecided', event.telemetryId, again.failed);
        continue;
      }
      if ('unconfigured' in again) {
        answered(event.decision, 'unknown_operation', event.telemetryId, unconfigured(event.operationKey, event.environment));
        continue;
      }
      const { response, event: replayed } = again.evaluation;
      if (again.rebuilt) report.rebuiltCounts++;
      if (replayed.monitored) report.monitored.replayed++;
      const from = event.decision;
      answered(from, response.decision, event.telemetryId);
      if (again.retryNowChecked) report.retriesNowChecked.count++;
      if (from !== response.decision) {
        if (again.retryNowChecked) {
          report.retriesNowChecked.changed++;
          sample(report.retriesNowChecked.samples, event.telemetryId);
        }
        continue;
      }
      report.unchanged++;
      const before = recordedParts(event);
      const after = replayedParts(response);
      const parts = changedParts(before, after);
      if (parts.length) report.outcomeChanged++;
      for (const part of parts) {
        const key = `${part}\u0000${before[part]}\u0000${after[part]}`;
        let c = outcomeChanges.get(key);
        if (!c) outcomeChanges.set(key, (c = { part, from: before[part], to: after[part], count: 0, samples: [] }));
        c.count++;
        sample(c.samples, event.telemetryId);
      }
    }
    progress?.(report.examined);
  }
  report.transitions = [...transitions.values()].sort((a, b) => b.count - a.count || a.from.localeCompare(b.from) || a.to.localeCompare(b.to) || (a.detail ?? '').localeCompare(b.detail ?? ''));
  const order = (p: OutcomePart) => OUTCOME_PARTS.indexOf(p);
  report.outcomeChanges = [...outcomeChanges.values()].sort((a, b) => b.count - a.count || order(a.part) - order(b.part) || a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  report.skipped = [...skipped.values()].sort((a, b) => b.count - a.count);
  return report;
}
