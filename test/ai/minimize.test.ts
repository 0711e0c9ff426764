import test from 'ava';
import { createAdvisor } from '../../src/ai/advisor.js';
import { minimize } from '../../src/ai/minimize.js';
import { startFakeModel } from '../helpers/fakeModel.js';
import { ACTOR_ID, exportInput, IP, NOTES, PROOF, RESOURCE_ID, settings, UA } from './fixtures.js';

const EXPECTED_VIEW = {
  operation: { key: 'invoice.export', sensitivity: 'high', actionType: 'export', resourceType: 'invoice' },
  signals: { bulk_or_export_volume: 0.8, weak_session_continuity: 0.35 },
  score: 48,
  band: 'medium',
  counts: { requestedCount: 500, resourceCount: 500, velocityWindowCount: 3 },
  changedFields: [],
  requestDataFields: ['requestedCount', 'fields', 'format', 'amount', 'accessToken'],
  requestedFields: ['customer.email', 'amount'],
};

test('the model server receives exactly the minimized view: no ids by default, no ip, UA, notes or token', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  const s = settings();
  await createAdvisor({ url: fake.url, model: 'm' }).assess(minimize(exportInput(), s), s);

  t.is(fake.requests.length, 1);
  const { body, rawBody } = fake.requests[0];
  t.deepEqual(Object.keys(body).sort(), ['messages', 'model', 'response_format', 'temperature']);
  t.is(body.messages.length, 2);
  t.deepEqual(JSON.parse(body.messages[1].content), EXPECTED_VIEW);
  for (const secret of [ACTOR_ID, RESOURCE_ID, IP, UA, NOTES, PROOF, 'tok_zzz', 'sess_1', 'owner_1', 'finance']) {
    t.false(rawBody.includes(secret), `${secret} leaked`);
  }
});

test('actor.id and resource.id are sent only when allow-listed', async (t) => {
  const fake = await startFakeModel();
  t.teardown(fake.close);
  const s = settings({ allowFields: ['actor.id', 'resource.id'] });
  await createAdvisor({ url: fake.url, model: 'm' }).assess(minimize(exportInput(), s), s);
  const sent = JSON.parse(fake.requests[0].body.messages[1].content);
  t.deepEqual(sent, { ...EXPECTED_VIEW, actorId: ACTOR_ID, resourceId: RESOURCE_ID });
  t.false(fake.requests[0].rawBody.includes(IP));
});

test('allow-listed requestData values are sent, but never secret-looking keys, objects or long strings', (t) => {
  const input = exportInput();
  input.requestData = { ...input.requestData, currency: 'EUR', note: 'x'.repeat(100), nested: { a: 1 } };
  const v = minimize(input, {
    allowFields: ['requestData.amount', 'requestData.currency', 'requestData.accessToken', 'requestData.note', 'requestData.nested', 'requestData.missing'],
  });
  t.deepEqual(v.requestData, { amount: 1200, currency: 'EUR' });
});

test('signals are clamped to 0..1, junk names and values dropped; requestedCount defaults like SPEC 2.1', (t) => {
  const v = minimize(
    {
      ...exportInput(),
      signals: [
        { name: 'high_velocity', value: 3 },
        { name: 'new_device', value: -1 },
        { name: 'free text with spaces', value: 0.5 },
        { name: 'nan', value: Number.NaN },
      ],
      metadata: { changedFields: ['iban', 'iban', 'drop me: {"x":1}'] },
      requestData: undefined,
    },
    { allowFields: [] },
  );
  t.deepEqual(v.signals, { high_velocity: 1, new_device: 0 });
  t.deepEqual(v.counts, { requestedCount: 1 });
  t.deepEqual(v.changedFields, ['iban']);
  t.deepEqual(v.requestDataFields, []);

  const fromRequestData = minimize({ ...exportInput(), metadata: {}, requestData: { requestedCount: 40 } }, { allowFields: [] });
  t.is(fromRequestData.counts.requestedCount, 40);
});
