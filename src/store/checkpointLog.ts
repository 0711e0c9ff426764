/**
 * What the checkpointer does that a commit can wait behind (checkpointer.ts): a bulk checkpoint,
 * its sync of the file before a catch-up, a catch-up. Also their names in Server-Timing.
 */
export const CHECKPOINT_KINDS = ['bulk', 'filesync', 'catchup'] as const;
export type CheckpointKind = (typeof CHECKPOINT_KINDS)[number];

/** Spans kept per kind: bulks run ten times a second, so this covers seconds, far longer than any wait for a commit. */
const KEPT = 64;

/**
 * The checkpointer's recent spans of work, each kind in a ring of performance.now() instants, so
 * that an answer can say how long each was running during its wait for the commit (Server-Timing,
 * TPS_SERVER_TIMING). Rounds of the benchmark suspected the checkpoints of the tail at 50% load
 * and each built a throwaway copy to check (bench/ROUNDS.md); this keeps the check in every run.
 * A span still running counts up to the instant asked about.
 */
export class CheckpointLog {
  private readonly spans = Object.fromEntries(CHECKPOINT_KINDS.map((kind) => [kind, { start: new Float64Array(KEPT), end: new Float64Array(KEPT), next: 0 }])) as Record<
    CheckpointKind,
    { start: Float64Array; end: Float64Array; next: number }
  >;

  /** Starts a span of `kind` (now, unless told); call what it returns when the span ends. */
  begin(kind: CheckpointKind, start = performance.now()): (end?: number) => void {
    const ring = this.spans[kind];
    const slot = ring.next;
    ring.next = (slot + 1) % KEPT;
    ring.start[slot] = start;
    ring.end[slot] = Infinity;
    return (end = performance.now()) => {
      // A span overwritten before it ended (64 newer ones) keeps its successor's instants.
      if (ring.start[slot] === start) ring.end[slot] = end;
    };
  }

  /** Runs `work` as a span of `kind`, from `start` (now, unless told) until it settles. */
  async span<T>(kind: CheckpointKind, work: () => PromiseLike<T>, start = performance.now()): Promise<T> {
    const ended = this.begin(kind, start);
    try {
      return await work();
    } finally {
      ended();
    }
  }

  /** Milliseconds of [from, to] during which a span of `kind` was running (spans of one kind never overlap). */
  overlap(kind: CheckpointKind, from: number, to: number): number {
    const { start, end } = this.spans[kind];
    let total = 0;
    for (let i = 0; i < KEPT; i++) {
      const a = Math.max(from, start[i]!);
      const b = Math.min(to, end[i]!);
      if (b > a) total += b - a;
    }
    return total;
  }
}
