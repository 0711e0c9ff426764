/** One Server-Sent Events message, or a comment line (heartbeats are comments). */
export type SseItem = { kind: 'message'; id?: string; event?: string; data: string } | { kind: 'comment'; text: string };

/**
 * Parses an SSE byte stream (text/event-stream) into messages and comments, as EventSource would:
 * fields id, event and data (several data lines join with "\n"), a blank line ends a message.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseItem> {
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event: string | undefined;
  let data: string[] = [];
  for await (const chunk of body) {
    buffer += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length) yield { kind: 'message', id, event, data: data.join('\n') };
        id = event = undefined;
        data = [];
      } else if (line.startsWith(':')) {
        yield { kind: 'comment', text: line.slice(1).trimStart() };
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'id') id = value;
        else if (field === 'event') event = value;
      }
    }
  }
}
