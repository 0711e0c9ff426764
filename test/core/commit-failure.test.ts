import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { post, REDIS_TEST_URL, startTps, unique, type RunningTps, type StoreKind } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// An evaluation whose event cannot be committed answers 503 store_unavailable, "nothing was stored,
// retry the evaluation": the retry must find the challenges as they were before it. The store is made
// to fail for real (its events table renamed away, as in failures.test.ts), with the challenges in
// the process (the evaluation thread's or the HTTP thread's) and in Redis.

interface Setup {
  store: StoreKind;
  state: 'memory' | 'redis';
  thread: boolean;
}

const SETUPS: Setup[] = [
  { store: 'sqlite', state: 'memory', thread: true },
  { store: 'sqlite', state: 'memory', thread: false },
  { store: 'sqlite', state: 'redis', thread: true },
  { store: 'sqlite', state: 'redis', thread: false },
  { store: 'postgres', state: 'redis', thread: false },
];

const label = (s: Setup) => `[${s.store}, ${s.state}, ${s.thread ? 'evaluation thread' : 'HTTP thread'}]`;

async function start(t: ExecutionContext, s: Setup): Promise<{ tps: RunningTps; redisPrefix: string }> {
  const redisPrefix = `tps-test:${unique()}:`;
  const tps = await startTps({ store: s.store, redis: s.state === 'redis', redisPrefix, env: { TPS_EVALUATE_THREAD: String(s.thread) } });
  t.teardown(() => tps.close());
  t.is(Boolean(tps.tps.evaluationThread), s.thread);
  return { tps, redisPrefix };
}

const storeDown = (tps: RunningTps) => tps.tps.db.knex.schema.renameTable('events', 'events_away');
const storeBack = (tps: RunningTps) => tps.tps.db.knex.schema.renameTable('events_away', 'events');

async function evaluate(tps: RunningTps, body: EvaluateRequest): Promise<EvaluateResponse> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`);
  return res.body as EvaluateResponse;
}

async function refused(t: ExecutionContext, tps: RunningTps, body: EvaluateRequest): Promise<void> {
  const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
  t.is(res.status, 503);
  t.is(res.body.error.code, 'store_unavailable');
}

const retry = (base: EvaluateRequest, result: EvaluateRequest['challengeResult']): EvaluateRequest => ({ ...base, challengeResult: result });
const bankUpdate = (resourceId: string): EvaluateRequest => ({ ...samples.bankUpdate(), resource: { type: 'account', id: resourceId } });

for (const s of SETUPS) {
  test(`${label(s)} a retry refused for the store gets its challenge back: the same retry, by fingerprint or by id, is then satisfied`, async (t) => {
    const { tps } = await start(t, s);

    // By fingerprint.
    const base = bankUpdate('acc_fp');
    const first = await evaluate(tps, base);
    t.is(first.decision, 'step_up_required');
    const satisfied = retry(base, { type: 'passkey', passed: true });
    await storeDown(tps);
    await refused(t, tps, satisfied);
    await storeBack(tps);
    const allowed = await evaluate(tps, satisfied);
    t.is(allowed.decision, 'allow');
    t.deepEqual(allowed.reasons, [...first.reasons, 'challenge_satisfied']);
    t.is(allowed.score, first.score);
    // Still single use.
    const again = await evaluate(tps, satisfied);
    t.is(again.decision, 'step_up_required');
    t.true(again.reasons.includes('challenge_invalid'));

    // By id, after two refused retries that used it up too: one of another type (which was issued a
    // challenge of its own, withdrawn with the 503) and one that failed its passkey.
    const other = bankUpdate('acc_id');
    const challenged = await evaluate(tps, other);
    const id = challenged.challenge!.id;
    await storeDown(tps);
    await refused(t, tps, retry(other, { type: 'proof_token', passed: true, challengeId: id }));
    await refused(t, tps, retry(other, { type: 'passkey', passed: false, challengeId: id }));
    await storeBack(tps);
    const byId = await evaluate(tps, retry(other, { type: 'passkey', passed: true, challengeId: id }));
    t.is(byId.decision, 'allow');
    t.deepEqual(byId.reasons, [...challenged.reasons, 'challenge_satisfied']);
    // Nothing else is live for the transaction: neither the used challenge nor the withdrawn one.
    const after = await evaluate(tps, retry(other, { type: 'passkey', passed: true }));
    t.is(after.decision, 'step_up_required');
    t.true(after.reasons.includes('challenge_invalid'));
  });

  test(`${label(s)} a challenge issued by an evaluation refused for the store is withdrawn: its caller never saw it`, async (t) => {
    const { tps, redisPrefix } = await start(t, s);
    const base = bankUpdate('acc_issued');
    await storeDown(tps);
    await refused(t, tps, base);
    await storeBack(tps);
    if (s.state === 'redis') {
      const redis = new Redis(REDIS_TEST_URL);
      t.teardown(() => redis.disconnect());
      t.deepEqual(await redis.keys(`${redisPrefix}ch*`), [], 'neither the challenge nor its pointer is left');
    }
    const res = await evaluate(tps, retry(base, { type: 'passkey', passed: true }));
    t.is(res.decision, 'step_up_required');
    t.true(res.reasons.includes('challenge_invalid'));
    t.is(await tps.tps.events.count(), 1, 'only the retry was stored');
  });
}

// Before the commit: a retry fails once it has used its challenge up, when the Redis holding the
// velocity counts refuses the count (made to, for real: the counter's key holds a string INCR cannot
// count). It is a 503 state_unavailable, an outage to wait out, and its challenge is put back.
for (const s of SETUPS.filter((s) => s.state === 'redis' && s.store === 'sqlite')) {
  test(`${label(s)} a retry that fails before its commit (Redis refuses the velocity count) answers 503 state_unavailable and keeps its challenge`, async (t) => {
    const { tps, redisPrefix } = await start(t, s);
    const redis = new Redis(REDIS_TEST_URL);
    t.teardown(() => redis.disconnect());
    const base: EvaluateRequest = { ...samples.payment(0, 'fin_big'), requestData: { amount: 15000, currency: 'EUR' } };
    const first = await evaluate(tps, base);
    t.is(first.decision, 'step_up_required');
    t.is(first.challenge?.type, 'proof_token');

    // The count of the retry's own minute and the next (the test may straddle one).
    const bucket = Math.floor(Date.now() / 60_000);
    const counterKeys = [bucket, bucket + 1].map((b) => `${redisPrefix}v:test\u0000fin_big\u0000payment_transaction.create:${b}`);
    for (const key of counterKeys) await redis.set(key, 'not a number');
    const failed = retry(base, { type: 'proof_token', passed: false });
    const res = await post(`${tps.url}/api/evaluate`, failed, tps.secretKey);
    t.is(res.status, 503);
    t.is(res.body.error.code, 'state_unavailable');
    t.is(res.headers.get('retry-after'), '1');
    await redis.del(...counterKeys);

    // The challenge is live again: the retry that passed it is satisfied, on the challenged score.
    const allowed = await evaluate(tps, retry(base, { type: 'proof_token', passed: true }));
    t.is(allowed.decision, 'allow');
    t.deepEqual(allowed.reasons, [...first.reasons, 'challenge_satisfied']);
    t.is(allowed.score, first.score);
    t.is(await tps.tps.events.count(), 2, 'the refused retry stored nothing');
  });
}

