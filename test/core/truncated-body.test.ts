import net from 'node:net';
import test from 'ava';
import { capturedLogs, startTps } from '../helpers/tps.js';

// A client that hangs up before it has sent the body its content-length promised made a mistake of
// its own: the socket reads a 400 (Node's own, as it closes), and the service, whose answer no
// longer has anywhere to go, logs no "internal error".

test('a body cut short of its content-length is a client error, not an internal one', async (t) => {
  const logs = capturedLogs('info');
  const tps = await startTps({ logger: logs.logger });
  t.teardown(() => tps.close());
  const { hostname, port } = new URL(tps.url);

  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    const head = ['POST /api/evaluate HTTP/1.1', `host: ${hostname}:${port}`, `authorization: Bearer ${tps.secretKey}`, 'content-type: application/json', 'content-length: 400'];
    socket.write(`${head.join('\r\n')}\r\n\r\n{"operationKey":`);
    // Half-close: the body ends here, far short of 400 bytes, and the answer can still come back.
    setTimeout(() => socket.end(), 50);
  });

  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
  t.is(status, 400, answer.split('\r\n')[0]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.false(logs.lines.some((l) => /internal error/.test(l)), logs.lines.join('\n'));
});
