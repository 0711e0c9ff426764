// The fetch-style guard, (Request) => Response | null, with real Request objects and the real
// TPS server deciding.
import test from 'ava';
import { createClient } from '../../src/client/index.js';
import { decisionOf, tpsFetch } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { uid } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let client: ReturnType<typeof createClient>;

test.before(async () => {
  tps = await startTps();
  client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 });
});
test.after.always(async () => {
  await tps?.close();
});

const request = (path: string, headers: Record<string, string> = {}) => new Request(`https://app.example${path}`, { headers });
const user = (req: Request) => ({ id: req.headers.get('x-test-user') ?? 'u', role: req.headers.get('x-test-role') ?? undefined });

test('allow returns null and exposes the decision', async (t) => {
  const guard = tpsFetch({ client, operationKey: 'customer.create', user });
  const req = request('/customers', {
    'x-test-user': uid('user'), 'x-svc-session-id': uid('sess'), 'x-svc-continuity': 'strength=0.9;new-device=0;signal-age=5',
    'x-svc-recent-human-signal': new Date().toISOString(),
  });
  t.is(await guard(req), null);
  t.is(decisionOf(req)?.evaluation.decision, 'allow');
  t.deepEqual(decisionOf(req)?.transaction.actor, { id: req.headers.get('x-test-user')!, authenticated: true });
});

test('allow_redacted returns null; the handler redacts with decisionOf(request).redact', async (t) => {
  const guard = tpsFetch({ client, operationKey: 'customer.read_pii', user });
  const req = request(`/customers/${uid('c')}`, { 'x-test-user': uid('user'), 'x-test-role': 'support' });
  t.is(await guard(req), null);
  const body = decisionOf(req)!.redact({ customer: { name: 'Ada', email: 'ada@example.com' } });
  t.is(body.customer.name, 'Ada');
  t.is(body.customer.email, '***');
});

test('deny, throttle and step-up return Responses; a passkey retry re-evaluates with the verifier result', async (t) => {
  const deny = await tpsFetch({ client, operationKey: 'customer.read_pii', user })(request('/c', { 'x-test-user': uid('user'), 'x-test-role': 'sales' }));
  t.is(deny?.status, 403);
  t.is(deny?.headers.get('content-type'), 'application/json; charset=utf-8');
  t.truthy(((await deny!.json()) as { telemetryId: string }).telemetryId);

  const throttle = await tpsFetch({
    client, operationKey: 'payment_transaction.create', user,
    transaction: (_req, defaults) => ({ ...defaults, metadata: { velocityWindowCount: 1000 } }),
  })(request('/p', { 'x-test-user': uid('user'), 'x-test-role': 'finance' }));
  t.is(throttle?.status, 429);
  t.truthy(throttle?.headers.get('retry-after'));

  let seen: { proof: string; challengeId?: string } | undefined;
  const guard = tpsFetch({
    client, operationKey: 'bank_account.update', user,
    verifyPasskey: (proof, { challengeId }) => {
      seen = { proof, challengeId };
      return proof === 'good';
    },
  });
  const headers = { 'x-test-user': uid('user'), 'x-svc-session-id': uid('sess') };
  const path = `/bank-accounts/${uid('ba')}`;
  const challenge = await guard(request(path, headers));
  t.is(challenge?.status, 428);
  const { challenge: { id } } = (await challenge!.json()) as { challenge: { id: string } };
  const retry = await guard(request(path, { ...headers, 'x-svc-challenge-id': id, 'x-svc-passkey-assertion': 'good' }));
  t.is(retry, null);
  t.deepEqual(seen, { proof: 'good', challengeId: id });
});
