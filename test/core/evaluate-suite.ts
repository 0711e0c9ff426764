import type { TestFn } from 'ava';
import { createKeyPair } from '../../src/auth/keys.js';
import type { EvaluateRequest, EvaluateResponse } from '../../src/api/types.js';
import { awayFromVelocityEdge, get, post, startTps, type RunningTps, type StoreKind } from '../helpers/tps.js';

// The HTTP suite of the core service, registered once per store so SQLite and PostgreSQL run the
// very same assertions, and once more with its counters and challenges in Redis.

type Ctx = { tps: RunningTps };

const human = { continuityStrength: 0.9, recentHumanSignalAgeSeconds: 5 };
const actor = (extra: Partial<EvaluateRequest['actor']> = {}) => ({ id: 'user_1', authenticated: true, ...extra });

export const samples = {
  createCustomer: (): EvaluateRequest => ({ operationKey: 'customer.create', actor: actor(), resource: { type: 'customer', id: 'cus_1' }, session: { ...human } }),
  bankUpdate: (): EvaluateRequest => ({ operationKey: 'bank_account.update', actor: actor(), resource: { type: 'account', id: 'acc_1' }, requestData: { fields: ['iban'] } }),
  bulkExport: (): EvaluateRequest => ({
    operationKey: 'invoice.export',
    actor: actor({ roles: ['finance'] }),
    resource: { type: 'invoice', id: 'batch_7' },
    requestData: { requestedCount: 5000 },
    session: { ...human },
  }),
  readPii: (roles: string[]): EvaluateRequest => ({ operationKey: 'customer.read_pii', actor: actor({ roles }), resource: { type: 'customer', id: 'cus_9' }, session: { ...human } }),
  payment: (velocityWindowCount: number, actorId = 'user_1'): EvaluateRequest => ({
    operationKey: 'payment_transaction.create',
    actor: { id: actorId, authenticated: true, role: 'finance' },
    resource: { type: 'payment_method', id: 'pm_1' },
    requestData: { amount: 120, currency: 'EUR' },
    metadata: { velocityWindowCount },
    session: { ...human },
  }),
};

export function registerEvaluateSuite(test: TestFn<Ctx>, store: StoreKind, state: 'memory' | 'redis' = 'memory'): void {
  test.before(async (t) => {
    // A WAL of 64 KiB, so that the writer's catch-ups (and their metric) come within a few commits.
    t.context.tps = await startTps({ store, redis: state === 'redis', env: { TPS_SQLITE_WAL_MB: '0.0625' } });
  });
  test.after.always(async (t) => {
    await t.context.tps?.close();
  });

  const label = state === 'redis' ? `${store}, state in Redis` : store;
  const evaluate = (t: { context: Ctx }, body: unknown, key = t.context.tps.secretKey) => post(`${t.context.tps.url}/api/evaluate`, body, key);
  const ok = async (t: { context: Ctx; is: (a: unknown, b: unknown, m?: string) => void }, body: unknown): Promise<EvaluateResponse> => {
    const res = await evaluate(t, body);
    t.is(res.status, 200, JSON.stringify(res.body));
    return res.body as EvaluateResponse;
  };

  test(`[${label}] case 1: a low-risk create is allowed with exactly low_risk_operation`, async (t) => {
    const r = await ok(t, samples.createCustomer());
    t.is(r.decision, 'allow');
    t.deepEqual(r.reasons, ['low_risk_operation']);
    t.is(r.actionType, 'create');
    t.is(r.sensitivity, 'medium');
    t.is(r.riskBand, 'low');
    t.is(r.operationKey, 'customer.create');
    t.is(r.operationDisplayName, 'Create customer');
    t.is(r.resourceType, 'customer');
    t.is(r.policyId, 'standard');
    t.regex(r.policyVersionId!, /^pv_[0-9a-f]{20}$/);
    t.deepEqual(r.warnings, []);
    t.true(r.score >= 0 && r.score <= 100);
  });

  test(`[${label}] cases 2 and 3: step-up without a human signal, then the satisfied retry`, async (t) => {
    const first = await ok(t, samples.bankUpdate());
    t.is(first.decision, 'step_up_required');
    t.true(first.reasons.includes('missing_recent_human_signal'));
    t.true(first.reasons.includes('policy_recent_human_signal_required'));
    t.is(first.challenge?.type, 'passkey');
    t.regex(first.challenge?.id ?? '', /^ch_/);

    const retry = await ok(t, { ...samples.bankUpdate(), challengeResult: { type: 'passkey', passed: true } });
    t.is(retry.decision, 'allow');
    t.deepEqual(retry.reasons, [...first.reasons, 'challenge_satisfied']);
    t.is(retry.score, first.score);
    t.not(retry.telemetryId, first.telemetryId);
    t.is(retry.challenge, undefined);

    // Single use: the same retry again gets a fresh challenge, never an allow.
    const again = await ok(t, { ...samples.bankUpdate(), challengeResult: { type: 'passkey', passed: true } });
    t.is(again.decision, 'step_up_required');
    t.true(again.reasons.includes('challenge_invalid'));
    t.truthy(again.challenge?.id);
    t.not(again.challenge?.id, first.challenge?.id);
  });

  test(`[${label}] a challenge is bound to its transaction, its type and its environment`, async (t) => {
    const base = { ...samples.bankUpdate(), resource: { type: 'account', id: 'acc_bound' } };
    const first = await ok(t, base);
    t.is(first.decision, 'step_up_required');

    const otherResource = await ok(t, { ...base, resource: { type: 'account', id: 'acc_other' }, challengeResult: { type: 'passkey', passed: true, challengeId: first.challenge!.id } });
    t.is(otherResource.decision, 'step_up_required');
    t.true(otherResource.reasons.includes('challenge_invalid'));

    const otherData = await ok(t, { ...base, requestData: { fields: ['iban', 'bic'] }, challengeResult: { type: 'passkey', passed: true } });
    t.is(otherData.decision, 'step_up_required');

    const pair = await createKeyPair(t.context.tps.tps.keyStore, `other_${store}`);
    const elsewhere = await evaluate(t, { ...base, challengeResult: { type: 'passkey', passed: true } }, pair.secretKey);
    t.is(elsewhere.status, 200);
    t.is(elsewhere.body.decision, 'step_up_required');

    // The genuine retry still works: the mismatched attempts did not use the challenge up.
    const genuine = await ok(t, { ...base, challengeResult: { type: 'passkey', passed: true, challengeId: first.challenge!.id } });
    t.is(genuine.decision, 'allow');
    t.true(genuine.reasons.includes('challenge_satisfied'));
  });

  test(`[${label}] a newer challenge of the same transaction outlives the older one's use`, async (t) => {
    const base = { ...samples.bankUpdate(), resource: { type: 'account', id: 'acc_twice' } };
    const older = await ok(t, base);
    const newer = await ok(t, base);
    t.is(newer.decision, 'step_up_required');
    t.not(newer.challenge!.id, older.challenge!.id);

    const byId = await ok(t, { ...base, challengeResult: { type: 'passkey', passed: true, challengeId: older.challenge!.id } });
    t.is(byId.decision, 'allow');
    // The retry matched by fingerprint finds the newer challenge, unused: not challenge_invalid.
    const byFingerprint = await ok(t, { ...base, challengeResult: { type: 'passkey', passed: true } });
    t.is(byFingerprint.decision, 'allow');
    t.true(byFingerprint.reasons.includes('challenge_satisfied'));
    const spent = await ok(t, { ...base, challengeResult: { type: 'passkey', passed: true } });
    t.true(spent.reasons.includes('challenge_invalid'));
  });

  test(`[${label}] of concurrent retries naming one challenge, exactly one is allowed`, async (t) => {
    const base = { ...samples.bankUpdate(), resource: { type: 'account', id: 'acc_race' } };
    const first = await ok(t, base);
    t.is(first.decision, 'step_up_required');
    // Named by id: each refused retry is issued a fresh challenge, which a retry by fingerprint could use.
    const retry = { ...base, challengeResult: { type: 'passkey', passed: true, challengeId: first.challenge!.id } };
    const retries = await Promise.all(Array.from({ length: 12 }, () => ok(t, retry)));
    t.is(retries.filter((r) => r.decision === 'allow').length, 1);
    t.true(retries.filter((r) => r.decision !== 'allow').every((r) => r.decision === 'step_up_required' && r.reasons.includes('challenge_invalid')));
  });

  test(`[${label}] a failed challenge denies, and a wrong challenge type is not accepted`, async (t) => {
    const base = { ...samples.bankUpdate(), resource: { type: 'account', id: 'acc_fail' } };
    t.is((await ok(t, base)).decision, 'step_up_required');
    const failed = await ok(t, { ...base, challengeResult: { type: 'passkey', passed: false } });
    t.is(failed.decision, 'deny');
    t.true(failed.reasons.includes('challenge_failed'));

    t.is((await ok(t, base)).decision, 'step_up_required');
    const wrongType = await ok(t, { ...base, challengeResult: { type: 'proof_token', passed: true } });
    t.is(wrongType.decision, 'step_up_required');
    t.true(wrongType.reasons.includes('challenge_invalid'));
  });

  test(`[${label}] case 4: a bulk export is redacted`, async (t) => {
    const r = await ok(t, samples.bulkExport());
    t.is(r.decision, 'allow_redacted');
    t.true(r.reasons.includes('bulk_or_export_volume'));
    t.true(r.reasons.includes('policy_redaction_applied'));
    t.deepEqual(r.redaction, { fields: ['customer.email', 'customer.phone', 'customer.taxId'], strategy: 'mask' });
  });

  test(`[${label}] case 4b: requestedCount falls back from metadata to requestData to 1`, async (t) => {
    const viaMetadata = await ok(t, { ...samples.bulkExport(), requestData: { requestedCount: 1 }, metadata: { requestedCount: 5000 } });
    t.is(viaMetadata.decision, 'allow_redacted');
    const metadataWins = await ok(t, { ...samples.bulkExport(), requestData: { requestedCount: 5000 }, metadata: { requestedCount: 1 } });
    t.is(metadataWins.decision, 'allow');
    const neither = await ok(t, { ...samples.bulkExport(), requestData: undefined });
    t.is(neither.decision, 'allow');
    t.false(neither.reasons.includes('bulk_or_export_volume'));
  });

  test(`[${label}] cases 5 and 6: PII reads are redacted for support and denied without a role`, async (t) => {
    const support = await ok(t, samples.readPii(['support']));
    t.is(support.decision, 'allow_redacted');
    t.true(support.redaction!.fields.includes('customer.email'));

    const viaSingleRole = await ok(t, { ...samples.readPii([]), actor: { id: 'user_2', role: 'support' } });
    t.is(viaSingleRole.decision, 'allow_redacted');

    const admin = await ok(t, samples.readPii(['admin']));
    t.is(admin.decision, 'allow');

    const none = await ok(t, samples.readPii(['sales']));
    t.is(none.decision, 'deny');
    t.true(none.reasons.includes('policy_role_required'));
  });

  test(`[${label}] case 7: a caller velocity above the limit throttles`, async (t) => {
    const r = await ok(t, samples.payment(50, 'user_velocity'));
    t.is(r.decision, 'throttle');
    t.true(r.reasons.includes('velocity_limit_exceeded'));
    t.is(r.retryAfterSeconds, 60);
    t.is((await ok(t, samples.payment(3, 'user_calm'))).decision, 'allow');
  });

  test(`[${label}] TPS's own sliding window throttles per actor and operation`, async (t) => {
    t.is((await awayFromVelocityEdge()).max, 30);
    const results: string[] = [];
    for (let i = 0; i < 31; i++) results.push((await ok(t, samples.payment(0, 'user_burst'))).decision);
    t.deepEqual(results.slice(0, 30), Array(30).fill('allow'));
    t.is(results[30], 'throttle');
    const last = await ok(t, samples.payment(0, 'user_burst'));
    t.true(last.reasons.includes('service_velocity_limit_exceeded'));
    t.is((await ok(t, samples.payment(0, 'user_other'))).decision, 'allow');
  });

  test(`[${label}] case 8: changed fields raise privileged_write`, async (t) => {
    const r = await ok(t, { ...samples.bankUpdate(), metadata: { changedFields: ['iban'] }, session: { ...human } });
    t.true(r.reasons.includes('privileged_write'));
    t.is(r.decision, 'allow');
  });

  test(`[${label}] case 9: weak continuity raises the score and adds its reason`, async (t) => {
    for (const body of [samples.createCustomer(), samples.bulkExport(), samples.readPii(['support'])]) {
      const strong = await ok(t, body);
      const weak = await ok(t, { ...body, session: { ...body.session, continuityStrength: 0.1 } });
      t.false(strong.reasons.includes('weak_session_continuity'));
      t.true(weak.reasons.includes('weak_session_continuity'), body.operationKey);
      t.true(weak.score > strong.score, body.operationKey);
    }
  });

  test(`[${label}] each answered evaluation is stored with its explanation and no payload secrets`, async (t) => {
    const r = await ok(t, {
      ...samples.bulkExport(),
      metadata: { notes: 'ticket SECRET-NOTE-4711', proofToken: 'tok_SECRET_PROOF', changedFields: ['email'] },
      session: { ...human, ipAddress: '203.0.113.77', userAgent: 'UA-SECRET-AGENT' },
    });
    const stored = await t.context.tps.tps.events.get(t.context.tps.environment, r.telemetryId);
    t.truthy(stored);
    t.is(stored!.source, 'evaluate');
    t.is(stored!.decision, r.decision);
    t.is(stored!.score, r.score);
    t.deepEqual(stored!.reasons, r.reasons);
    t.is(stored!.policyVersionId, r.policyVersionId ?? null);
    t.is(stored!.actorId, 'user_1');
    t.is(stored!.resourceId, 'batch_7');
    t.deepEqual(stored!.requestSummary.changedFields, ['email']);
    t.is(stored!.requestSummary.requestedCount, 5000);
    const signals = stored!.explanation.signals;
    t.true(signals.some((s) => s.name === 'bulk_or_export_volume' && s.contribution > 0));
    const sum = signals.reduce((a, s) => a + s.contribution, 0);
    t.true(Math.abs(sum - r.score) < 0.01, `contributions ${sum} vs score ${r.score}`);
    t.true(stored!.explanation.rules.some((rule) => rule.name === 'redact-bulk-export' && rule.fired));
    t.true(stored!.explanation.rules.some((rule) => rule.name === 'require-roles' && !rule.fired));
    const raw = JSON.stringify(stored);
    for (const secret of ['SECRET-NOTE-4711', 'tok_SECRET_PROOF', '203.0.113.77', 'UA-SECRET-AGENT']) t.false(raw.includes(secret), secret);
  });

  test(`[${label}] /metrics times each commit, and on SQLite each checkpoint`, async (t) => {
    const scrape = async () => (await get(`${t.context.tps.url}/metrics`)).body as string;
    const valueIn = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    const metric = async (name: string) => valueIn(await scrape(), name);
    // Other tests share this server: every assertion is on what changed since this one began.
    const start = await scrape();
    // One after the other: each answer waits for its own commit, so three answers are three commits at least.
    for (let i = 0; i < 3; i++) await ok(t, samples.createCustomer());
    const after = await scrape();
    t.true(valueIn(after, 'tps_event_commit_seconds_count') - valueIn(start, 'tps_event_commit_seconds_count') >= 3);
    t.true(valueIn(after, 'tps_event_commit_seconds_sum') > valueIn(start, 'tps_event_commit_seconds_sum'));
    // Observed together for every commit, so within one scrape the two histograms never disagree.
    t.is(valueIn(after, 'tps_event_commit_seconds_count'), valueIn(after, 'tps_event_commit_batch_size_count'));
    if (store === 'sqlite') {
      // The writer's connection catches up once a checkpoint finds TPS_SQLITE_WAL_MB in the WAL (64
      // KiB for this suite, a few commits; the WAL restarts by itself only if no more than that
      // came between two checkpoints): evaluations go on until it has. With the default 32 MiB it
      // would take thousands.
      const checkpoints = valueIn(start, 'tps_sqlite_checkpoint_seconds_count');
      let commits = 0;
      while ((await metric('tps_sqlite_checkpoint_seconds_count')) <= checkpoints && commits < 400) {
        await ok(t, samples.createCustomer());
        commits += 1;
      }
      t.true((await metric('tps_sqlite_checkpoint_seconds_count')) > checkpoints, `no catch-up in ${commits} commits`);
    } else {
      t.is(await metric('tps_sqlite_checkpoint_seconds_count'), 0);
    }
  });

  test(`[${label}] 500 concurrent evaluations: distinct telemetryIds, all stored`, async (t) => {
    const bodies = Array.from({ length: 500 }, (_, i) => ({ ...samples.createCustomer(), actor: actor({ id: `burst_${i}` }) }));
    const results = await Promise.all(bodies.map((b) => evaluate(t, b)));
    t.true(results.every((r) => r.status === 200));
    const ids = new Set(results.map((r) => r.body.telemetryId as string));
    t.is(ids.size, 500);
    const found = await t.context.tps.tps.db.knex('events').whereIn('telemetry_id', [...ids]).count<{ n: number | string }[]>({ n: '*' });
    t.is(Number(found[0]!.n), 500);
  });
}
