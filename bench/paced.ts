import net from 'node:net';
import { newParts, recordParts, type AnswerParts } from './split.js';

/**
 * An open-loop driver for "latency at N% load": requests are due at evenly spaced instants
 * (rate per second), each goes out on an idle keep-alive connection (or waits for one), and its
 * latency is counted from the instant it was due, so queueing is never hidden.
 *
 * autocannon's overallRate is not used for this: it gives each connection a quota per second that
 * the connection spends as fast as it can, so "50%" arrives as bursts at full load and then
 * silence, and measures full-load latency.
 */

export interface PacedResult {
  ok: number;
  failed: number;
  seconds: number;
  /** Milliseconds from due instant to complete answer, for each 2xx answer. */
  latencies: Float64Array;
  /** The same answers' parts (split.ts). */
  parts: AnswerParts;
}

interface Conn {
  socket: net.Socket;
  requests: Buffer[];
  next: number;
  busy: boolean;
  due: number;
  /** When the driver took the request up: its due instant, late by the driver's own timer. */
  noticed: number;
  sentAt: number;
  buf: Buffer;
}

const HEADER_END = Buffer.from('\r\n\r\n');

/** Sends `rate` requests per second for `seconds`; connection i cycles through `requests[i]`. */
export async function paced(port: number, requests: Buffer[][], rate: number, seconds: number): Promise<PacedResult> {
  const latencies = new Float64Array(Math.ceil(rate * seconds) + 16);
  const parts = newParts(latencies.length);
  let ok = 0;
  let failed = 0;
  let answered = 0;
  const total = Math.round(rate * seconds);
  // Requests taken up with no idle connection yet: they wait behind answers still on their way.
  const waiting: { due: number; noticed: number }[] = [];
  const idle: Conn[] = [];
  const now = () => performance.now();

  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  // A lost answer must not hang the run: give up 30 s after the last request was due.
  const guard = setTimeout(() => finish(), (seconds + 30) * 1000);

  /** `noticed`: when a request that waited for a connection was taken up; one sent at once waited for none. */
  const send = (c: Conn, due: number, noticed?: number) => {
    c.busy = true;
    c.due = due;
    c.sentAt = now();
    c.noticed = noticed ?? c.sentAt;
    c.socket.write(c.requests[c.next]!);
    c.next = (c.next + 1) % c.requests.length;
  };

  const onData = (c: Conn, chunk: Buffer) => {
    c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
    for (;;) {
      const end = c.buf.indexOf(HEADER_END);
      if (end < 0) return;
      const head = c.buf.toString('latin1', 0, end);
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (c.buf.length < end + 4 + length) return;
      const status = Number(head.slice(9, 12));
      c.buf = c.buf.subarray(end + 4 + length);
      if (status >= 200 && status < 300) {
        recordParts(parts, ok, c.due, c.sentAt - c.due, c.sentAt - c.noticed, /\r\nserver-timing:([^\r]*)/i.exec(head)?.[1]);
        latencies[ok++] = now() - c.due;
      } else failed++;
      c.busy = false;
      if (++answered === total) return finish();
      const next = waiting.shift();
      if (next) send(c, next.due, next.noticed);
      else idle.push(c);
    }
  };

  const conns = await Promise.all(
    requests.map(
      (reqs) =>
        new Promise<Conn>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1');
          const c: Conn = { socket, requests: reqs, next: 0, busy: false, due: 0, noticed: 0, sentAt: 0, buf: Buffer.alloc(0) };
          socket.setNoDelay(true);
          socket.once('connect', () => resolve(c)).once('error', reject);
          socket.on('data', (chunk: Buffer) => onData(c, chunk));
          socket.on('error', () => void (c.busy && failed++));
        }),
    ),
  );
  idle.push(...conns);

  const start = now();
  const interval = 1000 / rate;
  let issued = 0;
  const tick = () => {
    const t = now();
    while (issued < total && start + issued * interval <= t) {
      const due = start + issued * interval;
      issued++;
      const c = idle.pop();
      if (c) send(c, due);
      else waiting.push({ due, noticed: t });
    }
    if (issued < total) setTimeout(tick, Math.max(0, Math.min(1, start + issued * interval - now())));
  };
  tick();
  await done;
  clearTimeout(guard);
  const seconds_ = (now() - start) / 1000;
  for (const c of conns) c.socket.destroy();
  return { ok, failed, seconds: seconds_, latencies: latencies.subarray(0, ok), parts };
}
