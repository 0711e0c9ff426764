/**
 * The evaluation thread's replies, sent in groups: what was evaluated in one turn of the event loop
 * leaves as one message, so a burst costs one message rather than one per reply (bench/ROUNDS.md,
 * ninth round). A group is cut at `max` replies, though: a burst held back until the whole turn was
 * evaluated reached the store as one batch while the writer sat idle, and every stage waited for
 * the one before it (bench/ROUNDS.md, eleventh round).
 */
export class Outbox<T> {
  private replies: T[] = [];
  private scheduled = false;

  constructor(
    private readonly send: (group: T[]) => void,
    private readonly max: number,
  ) {}

  push(reply: T): void {
    if (this.replies.push(reply) >= this.max) return this.flush();
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.replies.length === 0) return;
    const group = this.replies;
    this.replies = [];
    this.send(group);
  }
}
