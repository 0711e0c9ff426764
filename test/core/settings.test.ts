// Environment variables that used to pass unchecked: each bad value stops start-up with a message
// naming the variable, before anything is opened.
import test from 'ava';
import { readSettings } from '../../src/config/env.js';
import { startServer } from '../helpers/script.js';
import { freshDatabase, post } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

test('LOG_LEVEL: pino level names in any case; anything else is refused, naming LOG_LEVEL', (t) => {
  t.is(readSettings({}).logLevel, 'info');
  t.is(readSettings({ LOG_LEVEL: 'INFO' }).logLevel, 'info');
  t.is(readSettings({ LOG_LEVEL: ' Silent ' }).logLevel, 'silent');
  for (const level of ['fatal', 'error', 'warn', 'debug', 'trace']) t.is(readSettings({ LOG_LEVEL: level }).logLevel, level);
  t.throws(() => readSettings({ LOG_LEVEL: 'verbose' }), { message: /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"$/ });
});

test('PORT: 0 to 65535', (t) => {
  t.is(readSettings({ PORT: '0' }).port, 0);
  t.is(readSettings({ PORT: '65535' }).port, 65535);
  for (const port of ['65536', '70000', '-1', '80.5', 'http']) t.throws(() => readSettings({ PORT: port }), { message: new RegExp(`^PORT must be an integer from 0 to 65535, got "${port}"$`) }, port);
});

test('TPS_AI_URL: an http(s) URL, or unset', (t) => {
  t.is(readSettings({}).ai.url, undefined);
  t.is(readSettings({ TPS_AI_URL: '' }).ai.url, undefined);
  t.is(readSettings({ TPS_AI_URL: 'http://127.0.0.1:11434/v1' }).ai.url, 'http://127.0.0.1:11434/v1');
  t.is(readSettings({ TPS_AI_URL: 'https://api.openai.com/v1/chat/completions' }).ai.url, 'https://api.openai.com/v1/chat/completions');
  for (const url of ['127.0.0.1:11434/v1', 'api.openai.com', 'ftp://models.example/v1', 'http://', 'not a url']) {
    t.throws(() => readSettings({ TPS_AI_URL: url }), { message: /^TPS_AI_URL must be an http:\/\/ or https:\/\/ URL/ }, url);
  }
});

test('the server starts with LOG_LEVEL=INFO, and refuses LOG_LEVEL=verbose naming the variable', async (t) => {
  const db = freshDatabase('sqlite');
  try {
    const refused = await startServer({ DATABASE_URL: db.url, LOG_LEVEL: 'verbose' });
    t.is(refused.code, 1);
    t.regex(refused.stderr, /TPS failed to start: LOG_LEVEL must be one of/);

    const secretKey = 'svc_sec_settings_test_key_0123456789abcdef';
    const server = await startServer({ DATABASE_URL: db.url, LOG_LEVEL: 'INFO', TPS_SECRET_KEY: secretKey, TPS_PUBLISHABLE_KEY: '' });
    try {
      t.is(server.code, null, server.stderr);
      t.is((await post(`http://127.0.0.1:${server.port}/api/evaluate`, samples.createCustomer(), secretKey)).status, 200);
    } finally {
      await server.stop();
    }
  } finally {
    await db.drop();
  }
});

// Node turns a timer's delay over 2^31-1 ms into 1 ms, and a huge TTL made every step-up a 500.
test('settings that reach a timer or a date are bounded: the server refuses one past the bound, naming it', async (t) => {
  t.is(readSettings({ TPS_STREAM_HEARTBEAT_MS: '2147483647' }).events.streamHeartbeatMs, 2147483647);
  for (const [name, value] of [
    ['TPS_STREAM_HEARTBEAT_MS', '3000000000'],
    ['TPS_STREAM_POLL_MS', '2147483648'],
    ['TPS_COMMIT_MAX_DELAY_MS', '9999999999'],
    ['TPS_WATCH_DEBOUNCE_MS', '2147483648'],
    ['TPS_REDIS_TIMEOUT_MS', '2147483648'],
    ['TPS_CHALLENGE_TTL_SECONDS', '10000000000000'],
    ['TPS_EVENT_RETENTION_DAYS', '1000000000'],
  ] as const) {
    t.throws(() => readSettings({ [name]: value }), { message: new RegExp(`^${name} must be an integer from \\d+ to \\d+, got "${value}"$`) }, name);
  }
  t.is(readSettings({ TPS_CHALLENGE_TTL_SECONDS: String(30 * 24 * 3600) }).challengeTtlSeconds, 30 * 24 * 3600);
  // And a floor: a Redis command bounded by 0 ms could never answer.
  t.is(readSettings({}).redisTimeoutMs, 1000);
  t.is(readSettings({ TPS_REDIS_TIMEOUT_MS: '250' }).redisTimeoutMs, 250);
  for (const value of ['0', '-1', '1.5', 'soon']) {
    t.throws(() => readSettings({ TPS_REDIS_TIMEOUT_MS: value }), { message: new RegExp(`^TPS_REDIS_TIMEOUT_MS must be an integer from 1 to 2147483647, got "${value}"$`) }, value);
  }

  const db = freshDatabase('sqlite');
  try {
    const refused = await startServer({ DATABASE_URL: db.url, TPS_STREAM_HEARTBEAT_MS: '3000000000' });
    t.is(refused.code, 1);
    t.regex(refused.stderr, /TPS failed to start: TPS_STREAM_HEARTBEAT_MS must be an integer from 100 to 2147483647/);
    const ttl = await startServer({ DATABASE_URL: db.url, TPS_CHALLENGE_TTL_SECONDS: '10000000000000' });
    t.is(ttl.code, 1);
    t.regex(ttl.stderr, /TPS failed to start: TPS_CHALLENGE_TTL_SECONDS must be an integer from 1 to 2592000/);
  } finally {
    await db.drop();
  }
});
