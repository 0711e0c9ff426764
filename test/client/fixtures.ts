// Shared by the client, middleware and browser tests: the sample-config transactions of issue 2's
// table, and a way to run a real HTTP server on a free port.

import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EvaluateRequest } from '../../src/api/types.js';

let n = 0;
/** Unique ids, so tests sharing one TPS never collide on counters or challenges. */
export const uid = (prefix: string) => `${prefix}_${process.pid}_${Date.now().toString(36)}_${++n}`;

export const transactions = {
  /** Table case 1: allow, reasons exactly [low_risk_operation]. */
  allow: (): EvaluateRequest => ({
    operationKey: 'customer.create',
    actor: { id: uid('actor'), authenticated: true },
    resource: { type: 'customer', id: uid('cust') },
    session: { sessionId: uid('sess'), continuityStrength: 0.9, recentHumanSignalAgeSeconds: 5 },
  }),
  /** Table case 2: step_up_required (passkey) for want of a recent human signal. */
  stepUp: (): EvaluateRequest => ({
    operationKey: 'bank_account.update',
    actor: { id: uid('actor'), authenticated: true },
    resource: { type: 'bank_account', id: uid('ba') },
    session: { sessionId: uid('sess'), continuityStrength: 0.9 },
  }),
  /** Table case 4: allow_redacted for a large export. */
  export: (): EvaluateRequest => ({
    operationKey: 'invoice.export',
    actor: { id: uid('actor'), authenticated: true, role: 'finance' },
    resource: { type: 'invoice', id: uid('batch') },
    requestData: { requestedCount: 5000 },
  }),
  /** Table cases 5 and 6: allow_redacted for support, deny without support/admin. */
  readPii: (role: string): EvaluateRequest => ({
    operationKey: 'customer.read_pii',
    actor: { id: uid('actor'), authenticated: true, role },
    resource: { type: 'customer', id: uid('cust') },
  }),
  /** Table case 7: throttle from the caller's velocity count. */
  throttle: (): EvaluateRequest => ({
    operationKey: 'payment_transaction.create',
    actor: { id: uid('actor'), authenticated: true, role: 'finance' },
    resource: { type: 'payment_transaction', id: uid('pt') },
    metadata: { velocityWindowCount: 1000 },
  }),
};

export interface Running {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 on a free port; close() also drops kept-alive sockets. */
export async function listen(handler: RequestListener): Promise<Running> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/**
 * A node:http server that hands each request to `handle` as a fetch Request, the way a Worker,
 * Deno, Bun or a Next route handler receives it, and writes back its Response (500 if it rejects).
 */
export async function serveFetch(handle: (request: Request) => Promise<Response>): Promise<Running> {
  return listen(async (req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
    try {
      const response = await handle(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body }));
      res.writeHead(response.status, Object.fromEntries(response.headers)).end(Buffer.from(await response.arrayBuffer()));
    } catch (err) {
      // What a platform does with a handler that rejects: a bare 500.
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    }
  });
}

/** A base URL where nothing listens: a TPS that was started, then stopped. */
export async function stoppedServerUrl(start: () => Promise<{ url: string; close(): Promise<void> }>): Promise<string> {
  const tps = await start();
  await tps.close();
  return tps.url;
}

