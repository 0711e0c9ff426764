// A real OpenAI-compatible chat-completions server on 127.0.0.1 (port 0), scripted per request,
// that records every request it receives so tests can assert on exactly what a model would see.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type FakeReply =
  /** A well-formed answer whose content is {"scoreDelta", "rationale", "labels"}. */
  | { kind: 'answer'; scoreDelta: number; rationale?: string; labels?: string[] }
  /** A 200 envelope whose message content is this raw string (garbage, fenced JSON, wrong shape…). */
  | { kind: 'content'; content: string }
  /** Waits delayMs, then sends `then` (default: a zero-delta answer); dropped if the client hung up. */
  | { kind: 'slow'; delayMs: number; then?: FakeReply }
  /** A non-2xx (or any) status with a body. */
  | { kind: 'status'; status: number; body?: string };

export const reply = {
  answer: (scoreDelta: number, rationale = 'looks consistent with the signals', labels: string[] = ['test_label']): FakeReply => ({
    kind: 'answer',
    scoreDelta,
    rationale,
    labels,
  }),
  slow: (delayMs: number, then?: FakeReply): FakeReply => ({ kind: 'slow', delayMs, then }),
  garbage: (): FakeReply => ({ kind: 'content', content: 'Sure! The risk looks high to me.' }),
  content: (content: string): FakeReply => ({ kind: 'content', content }),
  tooLarge: (): FakeReply => ({ kind: 'answer', scoreDelta: 95, rationale: 'everything is suspicious', labels: ['overreach'] }),
  status: (status = 500, body = '{"error":{"message":"model crashed"}}'): FakeReply => ({ kind: 'status', status, body }),
};

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (or the raw text when it was not JSON). */
  body: any;
  rawBody: string;
  /** True once the client hung up before an answer was sent (e.g. it aborted at its timeout). */
  clientAborted: boolean;
}

export interface FakeModel {
  /** Base URL ending in /v1, as one would give TPS_AI_URL. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Queues replies for the next requests, in order. */
  script(...replies: FakeReply[]): void;
  /** Drops replies still queued (e.g. one meant for a request that timed out before arriving). */
  clearScript(): void;
  /** The reply once the queue is empty (initially a zero-delta answer). */
  setDefault(r: FakeReply): void;
  close(): Promise<void>;
}

export async function startFakeModel(): Promise<FakeModel> {
  const queue: FakeReply[] = [];
  let fallback: FakeReply = reply.answer(0);
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();

  const server: Server = createServer((req, res) => {
    // Recorded on arrival, so a client that aborts mid-upload still shows up; body filled at 'end'.
    const record: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: undefined, rawBody: '', clientAborted: false };
    requests.push(record);
    res.on('close', () => {
      if (!res.writableEnded) record.clientAborted = true;
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = rawBody;
      try {
        body = JSON.parse(rawBody);
      } catch {
        /* keep the raw text */
      }
      record.body = body;
      record.rawBody = rawBody;
      const model = (body as { model?: string })?.model ?? 'fake-model';
      send(queue.shift() ?? fallback, model);
    });

    function send(r: FakeReply, model: string): void {
      if (res.destroyed || res.writableEnded) return;
      switch (r.kind) {
        case 'slow': {
          const timer = setTimeout(() => {
            timers.delete(timer);
            send(r.then ?? reply.answer(0), model);
          }, r.delayMs);
          timers.add(timer);
          res.on('close', () => {
            clearTimeout(timer);
            timers.delete(timer);
          });
          return;
        }
        case 'status':
          res.writeHead(r.status, { 'content-type': 'application/json' }).end(r.body ?? '');
          return;
        case 'answer':
          return envelope(JSON.stringify({ scoreDelta: r.scoreDelta, rationale: r.rationale ?? '', labels: r.labels ?? [] }), model);
        case 'content':
          return envelope(r.content, model);
      }
    }

    function envelope(content: string, model: string): void {
      const body = {
        id: `chatcmpl-${requests.length}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    }
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...replies) => void queue.push(...replies),
    clearScript: () => void queue.splice(0),
    setDefault: (r) => void (fallback = r),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
