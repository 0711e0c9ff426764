/**
 * Requests on their way to another thread or process, each waiting for its reply by id.
 *
 * Not a Map. V8 rehashes a Map as entries come and go, and links each old hash table, entries
 * and all, to its successor. A long-lived Map that every request enters and leaves is rehashed
 * over and over; once one of its tables is in the old generation (as after any busy spell), that
 * dead table keeps its successor alive through the next scavenges, the successor its own, and so
 * on: every request's waiter, with the request's objects it holds, is promoted and left for a
 * major GC. After the benchmark's ingest phase this promoted ~1.2 MB/s in the HTTP thread at half
 * load (bench/ROUNDS.md, fifty-second round). A null-prototype object keeps integer keys in a
 * dictionary whose old tables link to nothing.
 */
export class AwaitingReplies<W> {
  private waiting: Record<number, W> = Object.create(null) as Record<number, W>;

  add(id: number, waiter: W): void {
    this.waiting[id] = waiter;
  }

  get(id: number): W | undefined {
    return this.waiting[id];
  }

  /** The waiter for `id`, no longer waiting; undefined if there was none. */
  take(id: number): W | undefined {
    const waiter = this.waiting[id];
    if (waiter !== undefined) delete this.waiting[id];
    return waiter;
  }

  /** Every waiter, none waiting any more (what was in flight when the other side went). */
  takeAll(): W[] {
    const all = Object.values(this.waiting);
    this.waiting = Object.create(null) as Record<number, W>;
    return all;
  }
}
