import { GroupCommitter } from '../record/groupCommit.js';
import type { EventRow } from '../store/eventRows.js';
import type { EventInsert, EventWriter } from '../store/eventWriteTx.js';
import { answerWorkers, isMessage, primaryRequests } from './primaryRequests.js';

/**
 * Several workers on one SQLite file (TPS_WORKERS > 1): the primary commits every worker's events.
 * Two writers on one file meet at SQLite's write lock, and the one that finds it taken waits in
 * SQLite's busy handler, which polls, sleeping 1, 2, 5, 10… ms between tries: it wakes a whole
 * sleep after the lock came free (3.8 s of such sleeping in 5 s at full load with two workers,
 * bench/ROUNDS.md, twenty-fourth round). With one writer there is no lock to wait for: a worker
 * sends each batch its group commit would have committed, and answers once the primary says the
 * batch is committed. Two messages a batch; the workers' rare other writes (facets, retention)
 * stay their own. The evaluate path's batches that reach the primary together share one commit,
 * as evaluations share one in a process (record/groupCommit.ts); ingest's are committed one by
 * one, since two workers' batches may hold the same telemetryId.
 */
type Kind = 'insertAlone' | 'insertNew';
type Request = { tps: 'events.commit'; id: number; kind: Kind; rows: readonly EventInsert[] };
// A failure's code goes with it: a worker's group commit tries its batch's events alone only after a row's fault (record/groupCommit.ts).
type Reply = { tps: 'events.committed'; id: number; stored?: EventRow[] } | { tps: 'events.failed'; id: number; message: string; code?: string };

const isRequest = isMessage<Request>('events.commit');
const isReply = isMessage<Reply>('events.committed', 'events.failed');

/**
 * The primary's commits of the workers' batches. Evaluate's batches that reach it together share
 * one transaction: a worker has one batch of each kind on its way at a time, so `workers` batches
 * at most wait together. A group's transaction fails whole, whichever batch failed it, so after a
 * row's fault each of its batches is committed alone (GroupCommitter): a batch fails only for a
 * fault of its own, not for one of another worker's. Ingest's batches are committed one by one
 * (two may hold the same telemetryId).
 */
export function workersCommits(writer: EventWriter, workers: number): Pick<EventWriter, Kind> {
  const grouped = new GroupCommitter<readonly EventInsert[]>((batches) => writer.insertAlone(batches.flat()), workers, 0);
  return {
    insertAlone: (rows) => grouped.append(rows),
    insertNew: (rows) => writer.insertNew(rows),
  };
}

/** The primary's side: every worker's batches, committed on `writer`, each answered to its worker. */
export function commitWorkersEvents(writer: EventWriter, workers: number): void {
  const commits = workersCommits(writer, workers);
  const failed = (m: Request, message: string): Reply => ({ tps: 'events.failed', id: m.id, message });
  answerWorkers(
    isRequest,
    async (m): Promise<Reply> => {
      try {
        const stored = m.kind === 'insertNew' ? await commits.insertNew(m.rows) : await commits.insertAlone(m.rows);
        return { tps: 'events.committed', id: m.id, ...(stored && { stored }) };
      } catch (err) {
        const code = (err as { code?: unknown } | undefined)?.code;
        return { ...failed(m, (err as Error)?.message ?? String(err)), ...(typeof code === 'string' && { code }) };
      }
    },
    failed,
  );
}

/** Why a worker's batch failed: the primary's writer said so (with its error's code), or the primary is gone. */
export class PrimaryCommitError extends Error {
  constructor(
    message: string,
    readonly code?: string,
    /** The primary went away with the batch: it may have been committed (surelyNotCommitted). */
    readonly uncertain = false,
  ) {
    super(message);
  }
}

/**
 * A worker's side: `local`'s event commits go to the primary instead; its transactions (the rare
 * writes other than a batch of events) stay on `local`. A batch on its way when the primary goes
 * fails, so no answer waiting for it is sent.
 */
export function committedByPrimary(local: EventWriter): EventWriter {
  const ask = primaryRequests(isReply, (why) => new PrimaryCommitError(`${why}; the batch may not be committed`, undefined, true));
  const commit = async (kind: Kind, rows: readonly EventInsert[]): Promise<EventRow[]> => {
    const reply = await ask((id): Request => ({ tps: 'events.commit', id, kind, rows }));
    if (reply.tps === 'events.failed') throw new PrimaryCommitError(`the primary could not commit the batch: ${reply.message}`, reply.code);
    return reply.stored ?? [];
  };
  return {
    transaction: (work) => local.transaction(work),
    insertAlone: (rows) => commit('insertAlone', rows).then(() => undefined),
    insertNew: (rows) => commit('insertNew', rows),
  };
}
