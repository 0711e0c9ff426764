import test from 'ava';
import { buildFacts, humanSignalAge, requestSummary } from '../../src/facts/facts.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { REPO_ROOT } from '../helpers/tps.js';

const op = loadCatalog(REPO_ROOT).operations.get('invoice.export')!;
const base = { operationKey: 'invoice.export', actor: { id: 'u' }, resource: { type: 'invoice', id: 'i' } };

test('requestedCount falls back from metadata to requestData to 1', (t) => {
  t.is(buildFacts({ ...base, metadata: { requestedCount: 7 }, requestData: { requestedCount: 9 } }, op, 0).metadata.requestedCount, 7);
  t.is(buildFacts({ ...base, requestData: { requestedCount: 9 } }, op, 0).metadata.requestedCount, 9);
  t.is(buildFacts(base, op, 0).metadata.requestedCount, 1);
  t.is(buildFacts({ ...base, metadata: { requestedCount: 0 } }, op, 0).metadata.requestedCount, 0);
});

test('roles merge actor.role into actor.roles without duplicates', (t) => {
  t.deepEqual(buildFacts({ ...base, actor: { id: 'u', role: 'admin', roles: ['finance', 'admin'] } }, op, 0).actor.roles, ['finance', 'admin']);
  t.deepEqual(buildFacts({ ...base, actor: { id: 'u', role: 'support' } }, op, 0).actor.roles, ['support']);
  t.deepEqual(buildFacts(base, op, 0).actor.roles, []);
});

test('the human signal age is the measured one when sent, else the timestamp\'s', (t) => {
  const now = Date.parse('2026-01-01T00:10:00Z');
  t.is(humanSignalAge({ recentHumanSignalAt: '2026-01-01T00:09:00Z' }, now), 60);
  t.is(humanSignalAge({ recentHumanSignalAt: '2026-01-01T00:09:00Z', recentHumanSignalAgeSeconds: 5 }, now), 5);
  t.is(humanSignalAge({ recentHumanSignalAt: '2026-01-01T00:09:00Z', recentHumanSignalAgeSeconds: 240 }, now), 240, 'a fast browser clock does not make it fresher');
  t.is(humanSignalAge({ recentHumanSignalAgeSeconds: 500 }, now), 500);
  t.is(humanSignalAge({ recentHumanSignalAt: '2026-01-01T00:11:00Z' }, now), 0, 'a clock ahead of ours counts as now');
  t.is(humanSignalAge(undefined, now), undefined);
});

test('facts and the request summary keep no notes, tokens, IPs or user agents', (t) => {
  const req = {
    ...base,
    metadata: { notes: 'n0te', proofToken: 't0ken', changedFields: ['email'] },
    session: { ipAddress: '198.51.100.1', userAgent: 'agent-x', sessionId: 's' },
    requestData: { requestedCount: 3, fields: ['email'] },
  };
  const text = JSON.stringify([buildFacts(req, op, 0), requestSummary(req)]);
  for (const v of ['n0te', 't0ken', '198.51.100.1', 'agent-x']) t.false(text.includes(v), v);
  t.true(buildFacts(req, op, 0).metadata.hasProofToken);
  t.deepEqual(requestSummary(req), { requestedCount: 3, changedFields: ['email'], requestDataFields: ['requestedCount', 'fields'], fields: ['email'] });
});
