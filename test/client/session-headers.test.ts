import test from 'ava';
import { parseContinuity, sessionFromHeaders } from '../../src/middleware/session-headers.js';

const reader = (headers: Record<string, string>) => (name: string) => headers[name];

test('reads the SPEC 4.3 headers and the continuity extension', (t) => {
  const now = Date.parse('2025-01-01T12:00:10Z');
  const session = sessionFromHeaders(reader({
    'x-svc-session-id': 'sess_1',
    'x-svc-tab-id': 'tab-1',
    'x-svc-recent-human-signal': '2025-01-01T12:00:00Z',
    'x-svc-continuity': 'strength=0.85;new-device=0',
  }), now);
  t.deepEqual(session, {
    sessionId: 'sess_1',
    tabId: 'tab-1',
    continuityStrength: 0.85,
    isNewDevice: false,
    recentHumanSignalAt: '2025-01-01T12:00:00.000Z',
    recentHumanSignalAgeSeconds: 10,
  });
});

test("the browser's signal-age wins over the server clock (clock skew)", (t) => {
  const now = Date.parse('2025-01-01T13:00:00Z');
  const session = sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2025-01-01T12:00:00Z', 'x-svc-continuity': 'signal-age=3;strength=1;new-device=1' }), now);
  t.is(session.recentHumanSignalAgeSeconds, 3);
  t.true(session.isNewDevice);
});

test('malformed or hostile values are dropped, strength is clamped', (t) => {
  const session = sessionFromHeaders(reader({
    'x-svc-session-id': 'bad id with spaces',
    'x-svc-tab-id': 'x'.repeat(500),
    'x-svc-recent-human-signal': 'yesterday',
    'x-svc-continuity': 'strength=7;new-device=;signal-age=-4',
  }));
  t.deepEqual(session, { continuityStrength: 1 });
  t.deepEqual(parseContinuity(undefined), {});
  t.deepEqual(parseContinuity('strength=abc, new-device=1'), { newDevice: true });
});

test('a timestamp slightly ahead (clock skew) is forwarded as the app server\'s now, with age 0', (t) => {
  const session = sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2025-01-01T00:04:00Z' }), Date.parse('2025-01-01T00:00:00Z'));
  t.is(session.recentHumanSignalAt, '2025-01-01T00:00:00.000Z');
  t.is(session.recentHumanSignalAgeSeconds, 0);
});

test('a timestamp more than 5 minutes ahead is dropped: TPS would refuse it', (t) => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  t.deepEqual(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2025-01-01T00:05:01Z' }), now), {});
  // The browser's measured age does not depend on its clock: it is kept (human-signal-skew.test.ts).
  t.deepEqual(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2030-01-01T00:00:00Z', 'x-svc-continuity': 'signal-age=7' }), now), { recentHumanSignalAgeSeconds: 7 });
  t.is(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2025-01-01T00:05:00Z' }), now).recentHumanSignalAt, '2025-01-01T00:00:00.000Z', '5 minutes exactly is kept, as now');
});

test('a timestamp whose ISO form is not a 4-digit year is dropped', (t) => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  // The last is read, but its ISO form, -000001-12-31T23:00:00.000Z, is what would be forwarded.
  for (const value of ['+010000-01-01T00:00:00Z', '-000001-01-01T00:00:00Z', '-271821-04-20T00:00:00Z', '0000-01-01T00:00:00+01:00']) {
    t.false(Number.isNaN(Date.parse(value)), `${value} parses`);
    t.deepEqual(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': value }), now), {}, value);
  }
  t.is(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '0001-01-01T00:00:00Z' }), now).recentHumanSignalAt, '0001-01-01T00:00:00.000Z');
});

test('a timestamp TPS would read otherwise than the app server (no offset, or a date that does not exist) is dropped', (t) => {
  const now = Date.parse('2025-01-01T00:10:00Z');
  // Date.parse reads the first in the app server's own time zone and rolls the second over to March.
  for (const value of ['2025-01-01T00:05:00', '2025-02-30T00:00:00Z']) {
    t.false(Number.isNaN(Date.parse(value)), `${value} parses`);
    t.deepEqual(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': value }), now), {}, value);
  }
  t.is(sessionFromHeaders(reader({ 'x-svc-recent-human-signal': '2025-01-01T01:05:00+01:00' }), now).recentHumanSignalAt, '2025-01-01T00:05:00.000Z');
});
