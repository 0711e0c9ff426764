import test, { type ExecutionContext } from 'ava';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { post, startTps, unique, type RunningTps } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// Two concurrent identical retries of one challenge: the first uses it up, the second finds it used
// and is issued a challenge of its own. When the store refuses their events, both answer 503 and
// both are undone, the one that used the challenge first (its event went first): the challenge must
// be the transaction's again, so the same retry, once the store is back, is satisfied (README
// "Step-up and the retry"). The store refuses for real: a trigger on the events table, in the test's
// own PostgreSQL schema, that holds the commit a while (so the second retry is evaluated meanwhile)
// and then raises (SQLSTATE P0001: the store's answer, so surely nothing was written).

interface Setup {
  state: 'memory' | 'redis';
  thread: boolean;
}

const SETUPS: Setup[] = [
  { state: 'memory', thread: true },
  { state: 'memory', thread: false },
  { state: 'redis', thread: false },
];

async function start(t: ExecutionContext, s: Setup): Promise<RunningTps> {
  const tps = await startTps({ store: 'postgres', redis: s.state === 'redis', redisPrefix: `tps-test:${unique()}:`, env: { TPS_EVALUATE_THREAD: String(s.thread) } });
  t.teardown(() => tps.close());
  return tps;
}

/** Makes every insert into the events table wait `seconds`, then fail; returns its undoing. */
async function refuseEvents(tps: RunningTps, seconds: number): Promise<() => Promise<void>> {
  const schema = new URL(tps.databaseUrl).searchParams.get('schema')!;
  const knex = tps.tps.db.knex;
  await knex.raw(`CREATE FUNCTION ??.refuse_events() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN PERFORM pg_sleep(${seconds}); RAISE EXCEPTION ''refused by the test''; END'`, [schema]);
  await knex.raw('CREATE TRIGGER refuse_events BEFORE INSERT ON ??.events FOR EACH STATEMENT EXECUTE FUNCTION ??.refuse_events()', [schema, schema]);
  return async () => {
    await knex.raw('DROP TRIGGER refuse_events ON ??.events', [schema]);
    await knex.raw('DROP FUNCTION ??.refuse_events()', [schema]);
  };
}

async function evaluate(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

for (const s of SETUPS) {
  test(`[postgres, ${s.state}, ${s.thread ? 'evaluation thread' : 'HTTP thread'}] two identical retries refused together leave the challenge to the same retry`, async (t) => {
    const tps = await start(t, s);
    const base: EvaluateRequest = { ...samples.bankUpdate(), resource: { type: 'account', id: 'acc_twice' } };
    const first = await evaluate(tps, base);
    t.is(first.decision, 'step_up_required');
    const retry: EvaluateRequest = { ...base, challengeResult: { type: 'passkey', passed: true } };

    const storeBack = await refuseEvents(tps, 1);
    const answers = await Promise.all([0, 1].map(() => post(`${tps.url}/api/evaluate`, retry, tps.secretKey)));
    for (const res of answers) {
      t.is(res.status, 503, JSON.stringify(res.body));
      t.is(res.body.error.code, 'store_unavailable');
      t.is(res.headers.get('retry-after'), '1');
    }
    await storeBack();

    const allowed = await evaluate(tps, retry);
    t.is(allowed.decision, 'allow', JSON.stringify(allowed.reasons));
    t.deepEqual(allowed.reasons, [...first.reasons, 'challenge_satisfied']);
    t.is(allowed.score, first.score);
    const again = await evaluate(tps, retry);
    t.is(again.decision, 'step_up_required', 'still single use');
    t.true(again.reasons.includes('challenge_invalid'));
    t.is(await tps.tps.events.count(), 3, 'the refused retries stored nothing');
  });
}
