// End to end in real headless Chromium: a page served by the test loads the browser bundle, calls
// prepare() and sends the headers to a Koa backend whose decision middleware forwards them to the
// real TPS server, which decides.
import test from 'ava';
import Koa from 'koa';
import Router from '@koa/router';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { EvaluateRequest } from '../../src/api/types.js';
import type { Evaluation } from '../../src/client/index.js';
import { createClient } from '../../src/client/index.js';
import { tpsKoa, type Outcome } from '../../src/middleware/index.js';
import type { Prepared } from '../../src/browser/index.js';
import { startTps } from '../helpers/tps.js';

const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let tps: Awaited<ReturnType<typeof startTps>>;
let browser: Browser;
let site: { url: string; close(): Promise<void> };
let buildDir: string;

interface Act {
  prepared: Prepared;
  status: number;
  body: { ok?: boolean; challenge?: { type: string; id: string }; debug: { transaction?: EvaluateRequest; evaluation?: Evaluation } };
}

function page(publishableKey: string) {
  return `<!doctype html><meta charset="utf-8"><title>TPS continuity</title>
<button id="go">Go</button><input id="field">
<script type="module">
  import * as lib from '/tps-browser.js';
  const capture = new URLSearchParams(location.search).get('capture') !== '0';
  window.lib = lib;
  window.tps = lib.createBrowserClient({ publishableKey: ${JSON.stringify(publishableKey)}, captureHumanSignals: capture });
  window.act = async (operationKey, path, extra = {}) => {
    const prepared = window.tps.prepare({ operationKey, resource: { type: 'test', id: path }, metadata: { screen: 'settings' } });
    const res = await fetch(path, { method: 'POST', headers: { ...prepared.headers, ...extra } });
    return { prepared, status: res.status, body: await res.json() };
  };
  document.title = 'ready';
</script>`;
}

test.before(async () => {
  buildDir = await mkdtemp(join(tmpdir(), 'tps-browser-'));
  const bundlePath = join(buildDir, 'tps-browser.js');
  await promisify(execFile)(process.execPath, ['scripts/build-browser.mjs', bundlePath]);
  const bundle = await readFile(bundlePath, 'utf8');
  tps = await startTps();
  const client = createClient({ baseUrl: tps.url, secretKey: tps.secretKey, timeoutMs: 5_000 });
  const actor = () => ({ id: 'browser-user', authenticated: true });

  const router = new Router();
  router.get('/', (ctx) => {
    ctx.type = 'html';
    ctx.body = page(tps.publishableKey);
  });
  router.get('/tps-browser.js', (ctx) => {
    ctx.type = 'text/javascript';
    ctx.body = bundle;
  });
  // Test-only: report what the middleware forwarded and what TPS answered, for every outcome.
  const debug: Koa.Middleware = async (ctx, next) => {
    await next();
    const outcome = ctx.state.tps as Outcome | undefined;
    ctx.body = { ...(ctx.body as object), debug: { transaction: outcome?.action === 'continue' ? outcome.transaction : outcome?.transaction, evaluation: outcome?.evaluation } };
  };
  const ok = (ctx: Koa.Context) => {
    ctx.body = { ok: true };
  };
  router.post('/api/customers', debug, tpsKoa({ client, actor, operationKey: 'customer.create' }), ok);
  router.post('/api/bank-accounts/:id', debug, tpsKoa({
    client, actor, operationKey: 'bank_account.update',
    verifyPasskey: (assertion, { challengeId }) => assertion === `passkey-ok:${challengeId}`,
  }), ok);
  const koa = new Koa();
  koa.use(router.routes());
  const server = koa.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  site = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
  // launch() gives every run a fresh temporary user data dir; each context is a fresh profile.
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: LAUNCH_ARGS });
});

test.after.always(async () => {
  await browser?.close();
  await site?.close();
  await tps?.close();
  if (buildDir) await rm(buildDir, { recursive: true, force: true });
});

async function open(context: BrowserContext, query = ''): Promise<Page> {
  const p = await context.newPage();
  await p.goto(`${site.url}/${query}`);
  await p.waitForFunction(() => document.title === 'ready');
  return p;
}

const HUMAN_EVENTS = ['pointerdown', 'pointermove', 'keydown', 'touchstart'];

/** The window listeners registered by the bundle itself (Playwright injects listeners of its own). */
async function bundleListeners(context: BrowserContext, p: Page) {
  const cdp = await context.newCDPSession(p);
  const scripts = new Map<string, string>();
  cdp.on('Debugger.scriptParsed', (event) => scripts.set(event.scriptId, event.url));
  await cdp.send('Debugger.enable');
  const { result } = await cdp.send('Runtime.evaluate', { expression: 'window' });
  const { listeners } = await cdp.send('DOMDebugger.getEventListeners', { objectId: result.objectId! });
  await cdp.detach();
  return listeners.filter((l) => scripts.get(l.scriptId)?.endsWith('/tps-browser.js'));
}

const act = (p: Page, operationKey: string, path: string, extra: Record<string, string> = {}) =>
  p.evaluate(([op, url, headers]) => (window as any).act(op, url, headers), [operationKey, path, extra] as const) as Promise<Act>;

test('a new device in a new tab: weak continuity, reported to TPS, which names the reasons', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const p = await open(context);
  const first = await act(p, 'customer.create', '/api/customers');
  const { session, headers } = first.prepared;
  t.true(session.isNewDevice);
  t.is(session.continuityStrength, 0);
  t.is(session.recentHumanSignalAt, undefined);
  t.regex(session.sessionId, /^[0-9a-f]{32}$/);
  t.deepEqual(Object.keys(headers).sort(), ['x-svc-continuity', 'x-svc-operation-key', 'x-svc-session-id', 'x-svc-tab-id']);
  t.is(first.status, 200);
  t.like(first.body.debug.transaction!.session, { sessionId: session.sessionId, tabId: session.tabId, isNewDevice: true, continuityStrength: 0 });
  const reasons = first.body.debug.evaluation!.reasons;
  t.true(reasons.includes('weak_session_continuity'));
  t.true(reasons.includes('new_device'));
  t.true(reasons.includes('missing_recent_human_signal'));
});

test('same tab: a real click counts as a human signal, the tab id survives a reload, TPS allows with low risk', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const p = await open(context);
  const first = await act(p, 'customer.create', '/api/customers');
  await p.click('#go');
  await p.keyboard.type('hi');
  const second = await act(p, 'customer.create', '/api/customers');
  t.is(second.status, 200);
  t.is(second.body.debug.evaluation!.decision, 'allow');
  t.is(second.prepared.session.tabId, first.prepared.session.tabId);
  t.is(second.prepared.session.continuityStrength, 0.8); // same session, same tab, human; device still new
  t.truthy(second.prepared.session.recentHumanSignalAt);
  t.true(second.body.debug.transaction!.session!.recentHumanSignalAgeSeconds! <= 2);
  t.false(second.body.debug.evaluation!.reasons.includes('missing_recent_human_signal'));
  t.false(second.body.debug.evaluation!.reasons.includes('weak_session_continuity'));

  await p.reload();
  await p.waitForFunction(() => document.title === 'ready');
  const afterReload = await act(p, 'customer.create', '/api/customers');
  t.is(afterReload.prepared.session.tabId, first.prepared.session.tabId);
  t.is(afterReload.prepared.session.sessionId, first.prepared.session.sessionId);
  t.is(afterReload.prepared.session.recentHumanSignalAt, second.prepared.session.recentHumanSignalAt);
  t.is(afterReload.prepared.session.continuityStrength, 0.8);
});

test('a new tab and a duplicated tab get their own tab id in the same session', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const original = await open(context);
  const a = await act(original, 'customer.create', '/api/customers');

  const other = await open(context);
  const b = await act(other, 'customer.create', '/api/customers');
  t.not(b.prepared.session.tabId, a.prepared.session.tabId);
  t.is(b.prepared.session.sessionId, a.prepared.session.sessionId);
  t.is(b.prepared.session.continuityStrength, 0.3); // same session only

  // window.open copies the opener's sessionStorage, exactly like "Duplicate tab" does.
  await original.evaluate(() => sessionStorage.setItem('sentinel', 'copied'));
  const [copy] = await Promise.all([context.waitForEvent('page'), original.evaluate(() => { window.open(location.href); })]);
  await copy.waitForFunction(() => document.title === 'ready');
  t.is(await copy.evaluate(() => sessionStorage.getItem('sentinel')), 'copied');
  const c = await act(copy, 'customer.create', '/api/customers');
  t.not(c.prepared.session.tabId, a.prepared.session.tabId);
  t.is(c.prepared.session.sessionId, a.prepared.session.sessionId);
  t.is(c.body.debug.transaction!.session!.tabId, c.prepared.session.tabId);

  // The original keeps its id.
  const again = await act(original, 'customer.create', '/api/customers');
  t.is(again.prepared.session.tabId, a.prepared.session.tabId);
});

test('tab state another script left in sessionStorage is not trusted: a foreign id or an impossible signal time is dropped', async (t) => {
  const prepareIn = async (saved: string) => {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    // Written before the bundle loads, as another script of the origin (or an older page) could.
    await context.addInitScript((value) => sessionStorage.setItem('svc:tab', value), saved);
    const p = await open(context);
    return p.evaluate(() => {
      try {
        return (window as any).tps.prepare({ operationKey: 'customer.create', resource: { type: 'customer', id: 'c1' } }) as Prepared;
      } catch (err) {
        return String(err);
      }
    });
  };
  // Out of Date's range: toISOString threw, so prepare() did.
  const huge = await prepareIn(JSON.stringify({ t: 'a'.repeat(32), h: 1e300 }));
  t.is(typeof huge, 'object', String(huge));
  t.is((huge as Prepared).session.recentHumanSignalAt, undefined);
  // An hour ahead (a clock set back since): it must not count as a fresh signal.
  const ahead = await prepareIn(JSON.stringify({ t: 'b'.repeat(32), h: Date.now() + 3_600_000 }));
  t.is((ahead as Prepared).session.recentHumanSignalAt, undefined);
  t.is((ahead as Prepared).session.tabId, 'b'.repeat(32)); // the id itself is fine
  t.is((ahead as Prepared).session.continuityStrength, 0.3); // same tab; no human signal
  // Not an id of ours (it would become a header value): a new tab id instead.
  const foreign = await prepareIn(JSON.stringify({ t: 'evil\r\nx-injected: 1', h: Date.now() - 1000 }));
  t.regex((foreign as Prepared).session.tabId, /^[0-9a-f]{32}$/);
  t.is((foreign as Prepared).session.recentHumanSignalAt, undefined);
});

test('a device becomes known in its next browser session, per publishable key', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const first = await act(await open(context), 'customer.create', '/api/customers');
  t.true(first.prepared.session.isNewDevice);
  await context.clearCookies(); // the browser session ends: session cookies go, localStorage stays
  const p = await open(context);
  const next = await act(p, 'customer.create', '/api/customers');
  t.not(next.prepared.session.sessionId, first.prepared.session.sessionId);
  t.false(next.prepared.session.isNewDevice);
  t.is(next.prepared.session.continuityStrength, 0.2);
  t.false(next.body.debug.evaluation!.reasons.includes('new_device'));
  t.is(await p.evaluate(() => localStorage.getItem(Object.keys(localStorage).find((k) => k.startsWith('svc:dev:'))!)), first.prepared.session.sessionId);
});

test('capture on: passive capture listeners, trusted events only; a recent click lets a bank change through', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const p = await open(context);
  const capture = (await bundleListeners(context, p)).filter((l) => HUMAN_EVENTS.includes(l.type));
  t.deepEqual(capture.map((l) => l.type).sort(), [...HUMAN_EVENTS].sort());
  t.true(capture.every((l) => l.passive && l.useCapture));

  await p.evaluate(() => {
    document.body.dispatchEvent(new PointerEvent('pointerdown', { bubbles: true }));
    document.body.dispatchEvent(new KeyboardEvent('keydown', { key: 'a', bubbles: true }));
  });
  const scripted = await act(p, 'bank_account.update', '/api/bank-accounts/ba_1');
  t.is(scripted.prepared.session.recentHumanSignalAt, undefined);
  t.is(scripted.status, 428);

  await p.click('#go');
  const human = await act(p, 'bank_account.update', '/api/bank-accounts/ba_1');
  t.truthy(human.prepared.headers['x-svc-recent-human-signal']);
  t.is(human.status, 200);
  t.is(human.body.debug.evaluation!.decision, 'allow');
});

test('capture off: no listeners, no signal, so TPS asks for a passkey; the verified retry goes through', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const p = await open(context, '?capture=0');
  const listeners = await bundleListeners(context, p);
  t.deepEqual(listeners.map((l) => l.type).sort(), ['pagehide', 'pageshow']);

  await p.click('#go');
  await p.keyboard.type('typed');
  const challenged = await act(p, 'bank_account.update', '/api/bank-accounts/ba_2');
  t.is(challenged.prepared.session.recentHumanSignalAt, undefined);
  t.false('x-svc-recent-human-signal' in challenged.prepared.headers);
  t.is(challenged.status, 428);
  const challenge = challenged.body.challenge!;
  t.is(challenge.type, 'passkey');
  t.true(challenged.body.debug.evaluation!.reasons.includes('missing_recent_human_signal'));

  const proof = await p.evaluate((id) => (window as any).lib.proofHeaders(id, { passkeyAssertion: `passkey-ok:${id}` }), challenge.id) as Record<string, string>;
  const retried = await act(p, 'bank_account.update', '/api/bank-accounts/ba_2', proof);
  t.is(retried.status, 200);
  t.true(retried.body.debug.evaluation!.reasons.includes('challenge_satisfied'));
});

test('the browser client refuses a secret key and bad prepare input', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const p = await open(context);
  const refused = await p.evaluate((secretKey) => {
    try {
      (window as any).lib.createBrowserClient({ publishableKey: secretKey });
      return 'accepted';
    } catch (err) {
      return (err as Error).message;
    }
  }, tps.secretKey);
  t.regex(refused, /secret key \(svc_sec_…\) must never be shipped to a browser/);
  const badInput = await p.evaluate(() => {
    try {
      (window as any).tps.prepare({ operationKey: 'customer.create', resource: { type: 'customer' } });
      return 'accepted';
    } catch (err) {
      return (err as Error).message;
    }
  });
  t.regex(badInput, /resource\.id/);
});
