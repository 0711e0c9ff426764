import net from 'node:net';
import test from 'ava';
import { generateKey } from '../../src/auth/keys.js';
import { tempConfig } from '../helpers/config.js';
import { logLines } from '../helpers/processes.js';
import { runningServer } from '../helpers/script.js';
import { freshDatabase } from '../helpers/tps.js';

// SIGHUP is caught from the server's first line (a reload on demand). Once SIGTERM has begun the
// stop, one more must not reload the service being closed (read the files, write the store): it is
// ignored, still caught, as its default action would end the process mid-close.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGHUP while TPS stops is ignored: the closing service does not reload, and it exits 0', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const db = freshDatabase('sqlite');
  t.teardown(async () => {
    cfg.cleanup();
    await db.drop();
  });
  const secretKey = generateKey('secret');
  const server = await runningServer({ DATABASE_URL: db.url, TPS_CONFIG_DIR: cfg.dir, TPS_WATCH_CONFIG: 'false', TPS_SECRET_KEY: secretKey, TPS_ENVIRONMENT: 'test' });
  t.teardown(() => void server.stop('SIGKILL'));

  // A request whose body has not all come in holds the stop open (close() waits for it).
  const socket = net.connect(server.port, '127.0.0.1');
  t.teardown(() => void socket.destroy());
  socket.on('error', () => undefined);
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString()));
  const head = ['POST /api/evaluate HTTP/1.1', 'host: 127.0.0.1', `authorization: Bearer ${secretKey}`, 'content-type: application/json', 'content-length: 400', 'expect: 100-continue'];
  socket.write(`${head.join('\r\n')}\r\n\r\n`);
  // Node answers 100 Continue once it has read the head: the request is in the service's hands.
  for (const deadline = Date.now() + 20_000; !answer.includes('100 Continue'); await sleep(10)) {
    if (Date.now() > deadline) throw new Error(`no 100 Continue: ${answer}`);
  }
  socket.write('{"operationKey":');

  server.signal('SIGTERM');
  await server.logged(/"msg":"TPS stopping"/);
  // An edit a reload would swap in, and the reload asked for.
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  server.signal('SIGHUP');
  await server.logged(/"msg":"(configuration reloaded|reload ignored: TPS is stopping)"/);
  socket.end();
  t.is(await server.stop(), 0, server.stderr);
  t.deepEqual(logLines(server.stdout, 'configuration reloaded'), []);
  t.is(logLines(server.stdout, 'reload ignored: TPS is stopping').length, 1);
});
