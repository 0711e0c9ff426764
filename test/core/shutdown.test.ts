import http from 'node:http';
import type { Socket } from 'node:net';
import test from 'ava';
import { createTps } from '../../src/app.js';
import { generateKey } from '../../src/auth/keys.js';
import { readSettings } from '../../src/config/env.js';
import type { AdvisoryPort } from '../../src/evaluate/advisory.js';
import { openDatabase } from '../../src/store/db.js';
import { freshDatabase, REPO_ROOT } from '../helpers/tps.js';

// close() (SIGTERM) with a keep-alive client whose evaluation is in flight: the evaluation is
// answered and committed, and its connection is closed once answered, so close() completes
// instead of waiting for the client to go quiet.

function postOn(agent: http.Agent, url: string, key: string, body: unknown): { socket: Promise<Socket>; response: Promise<{ status: number; connection?: string; body: any }> } {
  let gotSocket!: (s: Socket) => void;
  const socket = new Promise<Socket>((r) => (gotSocket = r));
  const response = new Promise<{ status: number; connection?: string; body: any }>((resolve, reject) => {
    const req = http.request(`${url}/api/evaluate`, { method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: JSON.parse(text) }));
    });
    req.on('socket', gotSocket);
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
  return { socket, response };
}

test('close() answers and commits an evaluation in flight on a keep-alive connection, then closes that connection', async (t) => {
  const db = freshDatabase('sqlite');
  let release!: () => void;
  let entered!: () => void;
  const inAdvisor = new Promise<void>((r) => (entered = r));
  const gate = new Promise<void>((r) => (release = r));
  // Holds the evaluation mid-way (the advisory stage) while close() begins.
  const advisor: AdvisoryPort = {
    async assess() {
      entered();
      await gate;
      return undefined;
    },
  };
  const key = generateKey('secret');
  const tps = await createTps(readSettings({ DATABASE_URL: db.url, TPS_CONFIG_DIR: REPO_ROOT, TPS_ENVIRONMENT: 'test', TPS_SECRET_KEY: key, LOG_LEVEL: 'silent', TPS_WATCH_CONFIG: 'false' }), { advisor });
  const agent = new http.Agent({ keepAlive: true });
  t.teardown(async () => {
    agent.destroy();
    await db.drop();
  });
  const { url } = await tps.listen(0, '127.0.0.1');

  const { socket, response } = postOn(agent, url, key, { operationKey: 'customer.create', actor: { id: 'u-1' }, resource: { type: 'customer', id: 'c-1' } });
  await inAdvisor;
  const closed = tps.close();
  release();
  const answer = await response;
  t.is(answer.status, 200);
  // The client is told not to reuse the connection, and the server ends it.
  t.is(answer.connection, 'close');
  // (Else the old behaviour: the connection would hold close() for keepAliveTimeout; end it here.)
  if (answer.connection !== 'close') agent.destroy();
  const s = await socket;
  if (!s.destroyed) await new Promise((r) => s.once('close', r));
  await closed;

  const store = await openDatabase(db.url, { migrate: false, checkpoint: false });
  try {
    const row = await store.knex('events').where({ telemetry_id: answer.body.telemetryId }).first('telemetry_id');
    t.truthy(row, 'the answered evaluation is committed');
  } finally {
    await store.close();
  }
});
