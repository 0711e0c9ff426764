// The human signal's age when the browser's clock is wrong: a Koa app with tpsKoa in front of the
// real TPS. The browser measures the age by its own clock (x-svc-continuity's signal-age), which no
// skew can distort; its timestamp is its clock too, and one running fast makes old activity look
// recent. TPS must decide on the measured age.
import test from 'ava';
import Koa from 'koa';
import Router from '@koa/router';
import { createClient } from '../../src/client/index.js';
import { tpsKoa, type Continue } from '../../src/middleware/index.js';
import { get, post, startTps } from '../helpers/tps.js';
import { listen, uid } from './fixtures.js';

let tps: Awaited<ReturnType<typeof startTps>>;
let app: Awaited<ReturnType<typeof listen>>;

test.before(async () => {
  tps = await startTps();
  const router = new Router();
  // bank_account.update requires a human signal at most 120 s old, else a passkey.
  router.put(
    '/bank-accounts/:id',
    tpsKoa({ client: createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 }), actor: () => ({ id: uid('user'), authenticated: true }), operationKey: 'bank_account.update' }),
    (ctx) => {
      ctx.body = { decision: (ctx.state.tps as Continue).evaluation.decision };
    },
  );
  app = await listen(new Koa().use(router.routes()).callback());
});
test.after.always(async () => {
  await app?.close();
  await tps?.close();
});

/** The headers of a browser whose clock runs `fastSeconds` ahead, whose last activity was `ageSeconds` ago. */
const browser = (ageSeconds: number, fastSeconds: number) => ({
  'x-svc-session-id': uid('sess'),
  'x-svc-continuity': `strength=0.9;new-device=0;signal-age=${ageSeconds}`,
  'x-svc-recent-human-signal': new Date(Date.now() + (fastSeconds - ageSeconds) * 1000).toISOString(),
});

const change = (headers: Record<string, string>) => fetch(`${app.url}/bank-accounts/${uid('ba')}`, { method: 'PUT', headers });

test('activity 4 minutes old from a browser 3 minutes fast steps up, decided on the measured age', async (t) => {
  // Its timestamp reads as a minute ago; the browser measured four.
  const res = await change(browser(240, 180));
  const body = (await res.json()) as { challenge?: { type: string }; telemetryId: string };
  t.is(res.status, 428);
  t.is(body.challenge?.type, 'passkey');
  const event = await get(`${tps.url}/api/events/${body.telemetryId}`, tps.secretKey);
  t.is(event.body.explanation.facts.session.humanSignalAgeSeconds, 240);
  t.true(event.body.reasons.includes('policy_recent_human_signal_required'));
});

test('recent activity from the same fast browser is allowed', async (t) => {
  const res = await change(browser(30, 180));
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { decision: 'allow' });
});

test('with no measured age, the timestamp decides (a direct evaluate)', async (t) => {
  const evaluate = (agoSeconds: number) =>
    post(
      `${tps.url}/api/evaluate`,
      {
        operationKey: 'bank_account.update',
        actor: { id: uid('user'), authenticated: true },
        resource: { type: 'account', id: uid('ba') },
        session: { sessionId: uid('sess'), continuityStrength: 0.9, recentHumanSignalAt: new Date(Date.now() - agoSeconds * 1000).toISOString() },
      },
      tps.secretKey,
    );
  t.is((await evaluate(30)).body.decision, 'allow');
  const stale = await evaluate(300);
  t.is(stale.body.decision, 'step_up_required');
  t.true(stale.body.reasons.includes('policy_recent_human_signal_required'));
});

test('a browser 10 minutes fast: its timestamp is dropped (TPS would refuse it), its measured age still decides', async (t) => {
  const recent = await change(browser(30, 600));
  t.is(recent.status, 200);
  t.deepEqual(await recent.json(), { decision: 'allow' });

  const stale = await change(browser(240, 600));
  const body = (await stale.json()) as { telemetryId: string };
  t.is(stale.status, 428);
  const event = await get(`${tps.url}/api/events/${body.telemetryId}`, tps.secretKey);
  t.is(event.body.explanation.facts.session.humanSignalAgeSeconds, 240);
});
