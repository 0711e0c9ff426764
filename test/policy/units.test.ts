import test from 'ava';
import fc from 'fast-check';
import type { EvaluateRequest } from '../../src/api/types.js';
import { readSettings } from '../../src/config/env.js';
import { buildFacts } from '../../src/facts/facts.js';
import { requestFromFacts } from '../../src/facts/request.js';
import { deepMerge } from '../../src/fixtures/load.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { locator, splitPath } from '../../src/policy/locate.js';
import { REPO_ROOT } from '../helpers/tps.js';

test('a YAML path is located at its key, or at the nearest parent that exists', (t) => {
  const text = ['id: x', 'rules:', '  - name: a', '    then:', '      decison: deny', '  - name: b', '    when: { all: [ { fact: actor.id, operator: equal, value: 1 } ] }', 'weights:', '  foo: 3', ''].join('\n');
  const loc = locator(text);
  t.deepEqual(splitPath('rules[1].when.all[0].fact'), ['rules', 1, 'when', 'all', 0, 'fact']);
  t.is(loc.line('id'), 1);
  t.is(loc.line('rules[0].then.decison'), 5);
  t.is(loc.line('rules[0].then.reason'), 4);
  t.is(loc.line('rules[1].when.all[0].fact'), 7);
  t.is(loc.line('weights.foo'), 9);
  t.is(loc.line('nope.deeper'), 1);
  t.is(locator('a: [').line('a'), 1);
});

test('fixture overrides merge into bases: objects by key, lists replaced, null removes', (t) => {
  t.deepEqual(deepMerge({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3], e: 2 }, d: null }), { a: { b: 1, c: [3], e: 2 } });
});

test('TPS_WATCH_CONFIG and TPS_WATCH_DEBOUNCE_MS', (t) => {
  t.true(readSettings({}).watchConfig);
  t.is(readSettings({}).watchDebounceMs, 250);
  t.false(readSettings({ TPS_WATCH_CONFIG: 'false' }).watchConfig);
  t.false(readSettings({ TPS_WATCH_CONFIG: '0' }).watchConfig);
  t.throws(() => readSettings({ TPS_WATCH_CONFIG: 'maybe' }), { message: 'TPS_WATCH_CONFIG must be true or false, got "maybe"' });
});

// Replay and to-fixture rebuild a request from stored facts: it must build the same facts again.
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const word = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
const requestArb: fc.Arbitrary<EvaluateRequest> = fc.record(
  {
    operationKey: fc.constantFrom('customer.create', 'invoice.export', 'payment_transaction.create'),
    actor: fc.record({ id: word, authenticated: opt(fc.boolean()), role: opt(word), roles: opt(fc.array(word, { maxLength: 3 })), trusted: opt(fc.boolean()), sessionAgeMinutes: opt(fc.nat(3000)) }, { requiredKeys: ['id'] }),
    resource: fc.record({ type: word, id: word, ownerId: opt(word), classification: opt(fc.constantFrom('PII', 'public', 'Restricted')) }, { requiredKeys: ['type', 'id'] }),
    requestData: opt(fc.record({ requestedCount: opt(fc.nat(100000)), amount: opt(fc.double({ min: 0, max: 1e6, noNaN: true })), currency: opt(fc.constantFrom('EUR', 'USD')), fields: opt(fc.array(word, { maxLength: 3 })) }, { requiredKeys: [] })),
    session: opt(
      fc.record(
        {
          sessionId: opt(word),
          tabId: opt(word),
          isNewDevice: opt(fc.boolean()),
          continuityStrength: opt(fc.double({ min: 0, max: 1, noNaN: true })),
          recentHumanSignalAgeSeconds: opt(fc.nat(5000)),
          recentHumanSignalAt: opt(fc.integer({ min: 0, max: 86_400_000 }).map((ago) => new Date(Date.UTC(2025, 0, 8) - ago).toISOString())),
          geoChanged: opt(fc.boolean()),
          networkChanged: opt(fc.boolean()),
          ipAddress: opt(fc.constant('10.0.0.1')),
        },
        { requiredKeys: [] },
      ),
    ),
    metadata: opt(
      fc.record(
        {
          requestedCount: opt(fc.nat(100000)),
          velocityWindowCount: opt(fc.nat(200)),
          changedFields: opt(fc.array(word, { maxLength: 3 })),
          resourceCount: opt(fc.nat(1000)),
          abnormalSequence: opt(fc.boolean()),
          objectAccessRare: opt(fc.boolean()),
          suspiciousTimeWindow: opt(fc.boolean()),
          localHour: opt(fc.integer({ min: 0, max: 23 })),
          proofToken: opt(word),
          notes: opt(word),
        },
        { requiredKeys: [] },
      ),
    ),
    rawSignals: opt(fc.dictionary(fc.constantFrom('botScore', 'x.y', 'flag'), fc.oneof(fc.boolean(), fc.double({ min: 0, max: 1, noNaN: true })))),
  },
  { requiredKeys: ['operationKey', 'actor', 'resource'] },
) as fc.Arbitrary<EvaluateRequest>;

test('requestFromFacts(facts) builds the same facts again, after the JSON round trip of storage', (t) => {
  const catalog = loadCatalog(REPO_ROOT);
  const now = Date.UTC(2025, 0, 8);
  fc.assert(
    fc.property(requestArb, (req) => {
      const op = catalog.operations.get(req.operationKey)!;
      const stored = JSON.parse(JSON.stringify(buildFacts(req, op, now)));
      const again = JSON.parse(JSON.stringify(buildFacts(requestFromFacts(stored), op, now + 123_456)));
      t.deepEqual(again, stored);
    }),
    { numRuns: 300 },
  );
});
