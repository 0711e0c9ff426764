import test from 'ava';
import { createTps } from '../../src/app.js';
import { generateKey } from '../../src/auth/keys.js';
import { readSettings } from '../../src/config/env.js';
import { startFakeModel } from '../helpers/fakeModel.js';
import { startServer } from '../helpers/script.js';
import { capturedLogs, freshDatabase, post, REPO_ROOT, startTps } from '../helpers/tps.js';

// A model server's key goes in TPS_AI_API_KEY, never in TPS_AI_URL (user:password@): fetch refuses
// such a URL with an error that quotes it, password included. Nothing the advisor logs, and no
// configuration error, may carry a key or a password.

const bulkExport = {
  operationKey: 'invoice.export',
  actor: { id: 'u-1', authenticated: true, roles: ['finance'] },
  resource: { type: 'invoice', id: 'inv-1' },
  requestData: { requestedCount: 5000, fields: ['email', 'total'] },
  session: { sessionId: 's-1' },
};

test.serial('a TPS_AI_URL with a user name or password stops start-up, pointing to TPS_AI_API_KEY, and its password is never printed', async (t) => {
  const db = freshDatabase('sqlite');
  const password = 'pw-SECRET-1357';
  const server = await startServer({ DATABASE_URL: db.url, TPS_ENVIRONMENT: 'test', TPS_AI_URL: `https://tps:${password}@models.example/v1` });
  t.teardown(async () => {
    await server.stop();
    await db.drop();
  });
  t.is(server.code, 1, 'the server started');
  t.regex(server.stderr, /TPS_AI_URL must not carry a user name or password .*TPS_AI_API_KEY/);
  t.false(`${server.stdout}${server.stderr}`.includes(password));

  // Other refusals of a URL or key show the value without its password, or not at all.
  const refusal = (env: Record<string, string>) => {
    try {
      readSettings(env);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };
  t.is(refusal({ TPS_AI_URL: `ftp://tps:${password}@models.example/v1?key=${password}` }), 'TPS_AI_URL must be an http:// or https:// URL, got "ftp://***:***@models.example/v1?…"');
  t.is(refusal({ TPS_AI_URL: `sk-live:${password}` }), 'TPS_AI_URL must be an http:// or https:// URL');
  t.is(refusal({ TPS_WATCH_DEBOUNCE_MS: 'soon' }), 'TPS_WATCH_DEBOUNCE_MS must be an integer from 0 to 2147483647, got "soon"', 'values of other variables are still shown');
});

test.serial('an advisor call that fails logs the error by name and code: neither the URL password nor the API key reach the log', async (t) => {
  const model = await startFakeModel();
  t.teardown(() => model.close());
  const apiKey = 'sk-SECRET-2468';
  const password = 'pw-SECRET-9753';

  // A key with a stray line break (a secrets file with CRLF endings): fetch refuses the header, quoting it.
  {
    const { logger, lines } = capturedLogs('debug');
    const tps = await startTps({ logger, env: { TPS_AI_URL: model.url, TPS_AI_API_KEY: `${apiKey}\nX` } });
    try {
      const res = await post(`${tps.url}/api/evaluate`, bulkExport, tps.secretKey);
      t.is(res.status, 200);
      t.is(res.body.aiAssessment.status, 'error');
    } finally {
      await tps.close();
    }
    t.false(lines.join('').includes(apiKey), 'the API key was logged');
    const failed = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'AI model call failed');
    t.like(failed?.err, { name: 'TypeError' });
  }

  // Settings made by hand rather than read from the environment (which refuses it): a URL with a password.
  {
    const { logger, lines } = capturedLogs('debug');
    const db = freshDatabase('sqlite');
    const secretKey = generateKey('secret');
    const settings = readSettings({ DATABASE_URL: db.url, TPS_CONFIG_DIR: REPO_ROOT, TPS_ENVIRONMENT: 'test', TPS_SECRET_KEY: secretKey, LOG_LEVEL: 'debug' });
    settings.ai.url = model.url.replace('http://', `http://tps:${password}@`);
    const tps = await createTps(settings, { logger });
    try {
      const { url } = await tps.listen(0, '127.0.0.1');
      const res = await post(`${url}/api/evaluate`, bulkExport, secretKey);
      t.is(res.status, 200);
      t.is(res.body.aiAssessment.status, 'error');
    } finally {
      await tps.close();
      await db.drop();
    }
    t.false(lines.join('').includes(password), 'the URL password was logged');
    const failed = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'AI model call failed');
    t.like(failed?.err, { name: 'TypeError' });
  }
  t.is(model.requests.length, 0);
});
