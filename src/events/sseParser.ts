/**
 * One Server-Sent Events message, or a comment line (heartbeats are comments). A message's `id` is
 * the last event id when it was dispatched (EventSource's lastEventId): its own, or an earlier one.
 */
export type SseItem = { kind: 'message'; id?: string; event?: string; data: string } | { kind: 'comment'; text: string };

/** What outlives a message and a connection, as in EventSource: the id to resume after (Last-Event-ID). */
export interface SseState {
  lastEventId?: string;
}

/**
 * Parses an SSE byte stream (text/event-stream) into messages and comments, as EventSource would:
 * fields id, event and data (several data lines join with "\n"), a blank line ends a block. As the
 * standard has it, an id persists until the server sends another, and a block's id becomes
 * `state.lastEventId` when the block ends, even a block with no data (it dispatches no message).
 * Pass the same state to the next connection's parse, and resume with its lastEventId.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>, state: SseState = {}): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder();
  let buffer = '';
  // The last event ID buffer: not reset at a block's end. It starts from the connection before's,
  // as browsers' does.
  let id = state.lastEventId;
  let event: string | undefined;
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        state.lastEventId = id;
        if (data.length) yield { kind: 'message', id, event, data: data.join('\n') };
        event = undefined;
        data = [];
      } else if (line.startsWith(':')) {
        yield { kind: 'comment', text: line.slice(1).trimStart() };
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        // The standard ignores an id that holds a NUL.
        else if (field === 'id') id = value.includes('\0') ? id : value;
        else if (field === 'event') event = value;
      }
    }
  }
}
