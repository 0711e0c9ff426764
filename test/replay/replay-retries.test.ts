import test, { type ExecutionContext } from 'ava';
import yaml from 'js-yaml';
import type { EvaluateRequest } from '../../src/api/types.js';
import { DEFAULT_CHALLENGE_TTL_MS } from '../../src/evaluate/offline.js';
import type { CaseSpec } from '../../src/fixtures/format.js';
import { MemoryVelocityCounter } from '../../src/state/counters.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { bareEvent } from '../helpers/events.js';
import { decideLive, storeHolding, tpsOn, type HistoryStep } from '../helpers/history.js';
import { REPO_ROOT } from '../helpers/tps.js';

// Step-up retries through `tps replay` and `tps events to-fixture`, run as a user runs them
// (bin/tps.js, a process of its own) over a SQLite store holding a scripted history that the
// server's Evaluator decided.

const T0 = Date.UTC(2025, 0, 8, 12, 0, 0); // on a minute: a 60 s window's bucket starts here
const at = (seconds: number) => T0 + seconds * 1000;

const payment = (amount: number, over: Partial<EvaluateRequest> = {}): EvaluateRequest => ({
  operationKey: 'payment_transaction.create',
  actor: { id: 'fin-1', authenticated: true, roles: ['finance'] },
  resource: { type: 'payment_method', id: 'pm-1' },
  session: { sessionId: 's-1', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
  requestData: { amount, currency: 'EUR' },
  ...over,
});
const passedProofToken = (): EvaluateRequest => payment(15_000, { metadata: { proofToken: 'tok-1' }, challengeResult: { type: 'proof_token', passed: true } });

interface Report {
  changed: number;
  outcomeChanged: number;
  rebuiltCounts: number;
  transitions: { from: string; to: string; count: number; samples: string[] }[];
  retriesNowChecked: { count: number; changed: number; samples: string[] };
}

async function replayJson(t: ExecutionContext, url: string, args: string[], code = 0): Promise<Report> {
  const run = await tpsOn(url, ['replay', ...args, '--format', 'json']);
  t.is(run.code, code, run.stderr);
  return JSON.parse(run.stdout) as Report;
}

/** The sample configuration with TPS's own window on payments down to 4 a minute. */
function fourAMinute(t: ExecutionContext): TempConfig {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  cfg.replace('rules/payments.yaml', 'serviceWindow: { seconds: 60, max: 30 }', 'serviceWindow: { seconds: 60, max: 4 }');
  return cfg;
}

// Three payments, a large one (step-up, the window's fourth), a fifth payment (throttled), then the
// large one's retry with the proof token: held back by the window it reads (5 > 4).
const throttledRetry: HistoryStep[] = [
  ...[1, 2, 3].map((s) => ({ at: at(s), req: payment(100) })),
  { at: at(4), req: payment(15_000) },
  { at: at(5), req: payment(100) },
  { at: at(10), req: passedProofToken() },
];

test('an invalid retry keeps the fresh challenge it was issued: the next retry passes on it, and an unchanged tree replays with no change', async (t) => {
  const expired = 4 + DEFAULT_CHALLENGE_TTL_MS / 1000 + 10;
  const steps: HistoryStep[] = [
    { at: at(4), req: payment(15_000) },
    // The challenge expired: challenge_invalid, and a fresh proof token challenge.
    { at: at(expired), req: passedProofToken() },
    { at: at(expired + 20), req: passedProofToken() },
  ];
  const events = await decideLive(REPO_ROOT, steps);
  t.deepEqual(
    events.map((e) => [e.decision, e.explanation.challengeResult ?? '-', e.explanation.challenge?.type ?? '-']),
    [
      ['step_up_required', '-', 'proof_token'],
      ['step_up_required', 'invalid', 'proof_token'],
      ['allow', 'satisfied', '-'],
    ],
  );
  t.true(events[1]!.reasons.includes('challenge_invalid'));
  const store = await storeHolding(t, REPO_ROOT, events);

  const report = await replayJson(t, store.url, [REPO_ROOT, '--fail-on-change']);
  t.is(report.changed + report.outcomeChanged, 0, JSON.stringify(report.transitions));
});

test('a satisfied retry stored before retries were held to the window is reported as the window now decides it, and marked', async (t) => {
  const cfg = fourAMinute(t);
  // Before this round a satisfied retry neither counted nor read TPS's count: it was allowed, and
  // its facts carried no count.
  const unread = new (class extends MemoryVelocityCounter {
    override async peek(): Promise<number> {
      return 0;
    }
  })();
  const events = await decideLive(cfg.dir, throttledRetry, unread);
  const retry = events[5]!;
  t.is(retry.decision, 'allow');
  t.is(retry.explanation.challengeResult, 'satisfied');
  (retry.explanation.facts as { velocity: object }).velocity = {};
  const store = await storeHolding(t, cfg.dir, events);

  // The same tree: the retry is held to the window with a rebuilt count, a change, and marked as such.
  const report = await replayJson(t, store.url, [cfg.dir]);
  t.deepEqual(
    report.transitions.map((x) => [x.from, x.to, x.count, x.samples]),
    [['allow', 'throttle', 1, ['h-6']]],
  );
  t.deepEqual(report.retriesNowChecked, { count: 1, changed: 1, samples: ['h-6'] });
  t.is(report.rebuiltCounts, 1);
  const text = await tpsOn(store.url, ['replay', cfg.dir]);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /satisfied retries recorded without a velocity count, now held to TPS's window: 1 \(1 decisions change, e\.g\. h-6\)/);

  // Recorded as the window holds it today (the count it read is stored): nothing changes, nothing is marked.
  const today = await storeHolding(t, cfg.dir, await decideLive(cfg.dir, throttledRetry));
  const same = await replayJson(t, today.url, [cfg.dir, '--fail-on-change']);
  t.is(same.changed + same.outcomeChanged, 0);
  t.deepEqual(same.retriesNowChecked, { count: 0, changed: 0, samples: [] });
});

test('tps events to-fixture turns a satisfied retry throttled by the window into a case tps test passes', async (t) => {
  const cfg = fourAMinute(t);
  const events = await decideLive(cfg.dir, throttledRetry);
  t.deepEqual(
    events.map((e) => e.decision),
    ['allow', 'allow', 'allow', 'step_up_required', 'throttle', 'throttle'],
  );
  t.true(events[5]!.reasons.includes('service_velocity_limit_exceeded'));
  const store = await storeHolding(t, cfg.dir, events);

  const made = await tpsOn(store.url, ['events', 'to-fixture', 'h-6', cfg.dir, '--name', 'throttled retry']);
  t.is(made.code, 0, made.stderr);
  const [c] = yaml.load(made.stdout) as CaseSpec[];
  // The count the retry read is the retry's; the challenged step counts for itself.
  t.is(c!.steps![0]!.serviceCount, undefined);
  t.is(c!.steps![0]!.expect!.challenge, 'proof_token');
  t.deepEqual(c!.steps![1]!.retry, { passed: true, type: 'proof_token' });
  t.is(c!.steps![1]!.serviceCount, 5);

  cfg.write('rules/payments.fixtures.yaml', `cases:\n${made.stdout}\n`);
  const run = await tpsOn(store.url, ['test', cfg.dir]);
  t.is(run.code, 0, run.stdout + run.stderr);
  t.regex(run.stdout, /✓ throttled retry/);
  t.regex(run.stdout, /1 passed, 0 failed/);
});

test('tps replay --env counts only that environment\'s stored operations when checking --operation', async (t) => {
  const store = await storeHolding(t, REPO_ROOT, [
    bareEvent('staging-1', { environment: 'staging', operationKey: 'vendor.delete', createdAt: at(1) }),
    bareEvent('test-1', { environment: 'test', createdAt: at(2) }),
  ]);
  // Stored in staging: an operation to replay there (with no --env, two environments are refused: replay-environment.test.ts).
  t.is((await replayJson(t, store.url, [REPO_ROOT, '--operation', 'vendor.delete', '--env', 'staging'])).changed, 0);
  // Not in test: it would select nothing there.
  const elsewhere = await tpsOn(store.url, ['replay', REPO_ROOT, '--operation', 'vendor.delete', '--env', 'test']);
  t.is(elsewhere.code, 2, elsewhere.stdout);
  t.regex(elsewhere.stderr, /--operation "vendor\.delete" is neither configured in the working tree nor found among the stored events in environment "test"/);
});
