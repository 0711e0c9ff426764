// Construction-time checks of the server client: no network involved.
import test from 'ava';
import { createClient, failureModeFor } from '../../src/client/index.js';

const baseUrl = 'http://127.0.0.1:1';

test('a publishable key is refused with a message saying which key to use', (t) => {
  const error = t.throws(() => createClient({ baseUrl, secretKey: 'svc_pub_abc' }));
  t.regex(error!.message, /publishable key \(svc_pub_…\)/);
  t.regex(error!.message, /secret key \(svc_sec_…\)/);
});

test('a missing or foreign key and a bad baseUrl are refused', (t) => {
  t.throws(() => createClient({ baseUrl, secretKey: '' }), { message: /svc_sec_/ });
  t.throws(() => createClient({ baseUrl, secretKey: 'sk_live_123' }), { message: /svc_sec_/ });
  t.throws(() => createClient({ baseUrl: 'tps.internal', secretKey: 'svc_sec_x' }), { message: /baseUrl/ });
});

test('a failureMode typo is refused at construction, not during an outage', (t) => {
  t.throws(() => createClient({ baseUrl, secretKey: 'svc_sec_x', failureMode: 'opne' as never }), { message: /failureMode/ });
  t.throws(() => createClient({ baseUrl, secretKey: 'svc_sec_x', failureMode: { operations: { 'a.b': 'allow' as never } } }), { message: /a\.b/ });
  t.notThrows(() => createClient({ baseUrl, secretKey: 'svc_sec_x', failureMode: { default: 'throw', operations: { 'a.b': 'open' } } }));
});

test('failureMode resolves per operation, then default, then closed', (t) => {
  const option = { default: 'throw' as const, operations: { 'customer.read_pii': 'open' as const } };
  t.is(failureModeFor(option, 'customer.read_pii'), 'open');
  t.is(failureModeFor(option, 'invoice.export'), 'throw');
  t.is(failureModeFor({ operations: {} }, 'x'), 'closed');
  t.is(failureModeFor(undefined, 'x'), 'closed');
  t.is(failureModeFor('open', 'x'), 'open');
  t.is(failureModeFor({ operations: {} }, 'toString'), 'closed');
});

test('a retry field given as undefined keeps its default; a bad one is refused at construction', (t) => {
  t.notThrows(() => createClient({ baseUrl, secretKey: 'svc_sec_x', retry: { retries: undefined, baseDelayMs: undefined, maxDelayMs: undefined } }));
  t.notThrows(() => createClient({ baseUrl, secretKey: 'svc_sec_x', retry: { retries: 0, baseDelayMs: 0, maxDelayMs: 0 } }));
  for (const [retry, message] of [
    [{ retries: -1 }, /retry\.retries must be a whole number >= 0, got -1/],
    [{ retries: 1.5 }, /retry\.retries/],
    [{ retries: Infinity }, /retry\.retries/],
    [{ baseDelayMs: Number.NaN }, /retry\.baseDelayMs must be a finite number >= 0, got NaN/],
    [{ maxDelayMs: '5000' }, /retry\.maxDelayMs/],
  ] as const) {
    t.throws(() => createClient({ baseUrl, secretKey: 'svc_sec_x', retry: retry as never }), { instanceOf: TypeError, message }, JSON.stringify(retry));
  }
});

test('timeoutMs is a positive number of milliseconds within what setTimeout can wait', (t) => {
  t.notThrows(() => createClient({ baseUrl, secretKey: 'svc_sec_x', timeoutMs: undefined }));
  t.notThrows(() => createClient({ baseUrl, secretKey: 'svc_sec_x', timeoutMs: 2_147_483_647 }));
  // 0, NaN or a string would time every call out at once, as would a delay past setTimeout's ceiling.
  for (const timeoutMs of [0, -5, Number.NaN, Infinity, 2_147_483_648, '2000']) {
    t.throws(() => createClient({ baseUrl, secretKey: 'svc_sec_x', timeoutMs: timeoutMs as never }), { instanceOf: TypeError, message: /timeoutMs must be/ }, String(timeoutMs));
  }
});
