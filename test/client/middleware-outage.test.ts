// A TPS outage under failureMode open or closed, through the Koa, Express and fetch-style middleware
// in front of a TPS that was started and stopped: the client stands in with a synthetic decision,
// and the middleware must report the outage to onError either way, and answer a closed stand-in
// with 503 protection_unavailable (the request was not judged), not 403 "blocked".
import test from 'ava';
import express from 'express';
import Koa from 'koa';
import { createClient, isTpsError, type FailureMode } from '../../src/client/index.js';
import { tpsExpress, tpsFetch, tpsKoa, type DecisionOptions } from '../../src/middleware/index.js';
import { startTps } from '../helpers/tps.js';
import { listen, serveFetch, stoppedServerUrl, type Running } from './fixtures.js';

let down: string;
test.before(async () => {
  down = await stoppedServerUrl(() => startTps());
});

const secretKey = 'svc_sec_outage_test';
const operationKey = 'customer.create';

type Serve = (options: DecisionOptions<any>) => Promise<Running>;
const adapters: Record<string, Serve> = {
  koa: (options) => listen(new Koa().use(tpsKoa(options)).use((ctx) => {
    ctx.body = { handler: true };
  }).callback()),
  express: (options) => listen(express().use(tpsExpress(options), (_req, res) => {
    res.json({ handler: true });
  })),
  fetch: (options) => {
    const guard = tpsFetch(options);
    return serveFetch(async (request) => (await guard(request)) ?? Response.json({ handler: true }));
  },
};

async function outage(serve: Serve, failureMode: FailureMode) {
  const errors: unknown[] = [];
  const app = await serve({ client: createClient({ baseUrl: down, secretKey, failureMode }), operationKey, onError: (err) => errors.push(err) });
  try {
    const res = await fetch(`${app.url}/customers`, { method: 'POST' });
    return { status: res.status, body: (await res.json()) as Record<string, any>, errors };
  } finally {
    await app.close();
  }
}

for (const [name, serve] of Object.entries(adapters)) {
  test(`${name}: TPS down with failureMode closed answers 503 protection_unavailable and tells onError`, async (t) => {
    const { status, body, errors } = await outage(serve, 'closed');
    t.is(status, 503);
    t.is(body.error.code, 'protection_unavailable');
    t.is(body.handler, undefined);
    t.is(errors.length, 1);
    t.true(isTpsError(errors[0]));
    t.like(errors[0], { code: 'network_error' });
  });

  test(`${name}: TPS down with failureMode open reaches the handler and tells onError`, async (t) => {
    const { status, body, errors } = await outage(serve, 'open');
    t.is(status, 200);
    t.true(body.handler);
    t.is(errors.length, 1);
    t.like(errors[0], { code: 'network_error' });
  });
}
