// A real TCP proxy in front of a real server that forwards every answer, except that for one whose
// status is at least 400 it forwards the status line and headers, then stalls: the body never
// comes. Answers are told apart by their Content-Length (TPS sets it on every JSON answer), so
// kept-alive connections carrying several answers work.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface StallingProxy {
  url: string;
  /** Statuses whose body was held back, in order. */
  stalled: number[];
  close(): Promise<void>;
}

const HEAD_END = Buffer.from('\r\n\r\n');

export async function stallingProxy(target: string): Promise<StallingProxy> {
  const { hostname, port } = new URL(target);
  const stalled: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    let pending = Buffer.alloc(0);
    let holding = false;
    upstream.on('data', (chunk: Buffer) => {
      if (holding) return;
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const end = pending.indexOf(HEAD_END);
        if (end < 0) return;
        const head = pending.subarray(0, end + HEAD_END.length);
        const text = head.toString('latin1');
        const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1]);
        if (status >= 400) {
          stalled.push(status);
          holding = true;
          client.write(head);
          return;
        }
        const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? Number.NaN);
        if (!Number.isFinite(length)) throw new Error(`stalling proxy: an answer without Content-Length (${text.split('\r\n')[0]})`);
        if (pending.length < head.length + length) return;
        client.write(pending.subarray(0, head.length + length));
        pending = pending.subarray(head.length + length);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stalled,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
