import test, { type ExecutionContext } from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import type { EventRecord } from '../../src/store/eventStore.js';
import { runTps } from '../helpers/cli.js';
import { decideLive, storeHolding, type HistoryStep } from '../helpers/history.js';
import { bareEvent } from '../helpers/events.js';
import { tempConfig, type TempConfig } from '../helpers/config.js';
import { REPO_ROOT } from '../helpers/tps.js';

// `tps replay` run as a user runs it (bin/tps.js, a process of its own) over a SQLite store holding
// a short, scripted history. What a replay must report is read off an independent oracle: the same
// requests decided live under the working tree (the server's Evaluator with its own counter and
// challenge store, each at its recorded time), compared with what was recorded.

const T0 = Date.UTC(2025, 0, 8, 12, 0, 0); // on a minute: a 60 s window's bucket starts here
const at = (seconds: number) => T0 + seconds * 1000;
const iso = (seconds: number) => new Date(at(seconds)).toISOString();

type Step = HistoryStep;

const calm = { continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 };

const payment = (actor: string, amount: number, over: Partial<EvaluateRequest> = {}): EvaluateRequest => ({
  operationKey: 'payment_transaction.create',
  actor: { id: actor, authenticated: true, roles: ['finance'] },
  resource: { type: 'payment_method', id: `pm-${actor}` },
  session: { sessionId: `s-${actor}`, ...calm },
  requestData: { amount, currency: 'EUR' },
  ...over,
});

const customerCreate = (id: string): EvaluateRequest => ({
  operationKey: 'customer.create',
  actor: { id: 'staff-1', authenticated: true, roles: ['staff'] },
  resource: { type: 'customer', id },
  session: { sessionId: 's-staff', ...calm },
});

/** A fresh SQLite store with the history recorded under `dir`, and its policy versions, as the server keeps them. */
async function recorded(t: ExecutionContext, dir: string, steps: Step[], extra: EventRecord[] = []) {
  const events = await decideLive(dir, steps);
  const store = await storeHolding(t, dir, [...events, ...extra]);
  return { ...store, events };
}

/** from→to counts of the decisions that differ between the recorded events and the live oracle's. */
function expectedTransitions(before: EventRecord[], after: EventRecord[], keep: (e: EventRecord) => boolean = () => true) {
  const expected: Record<string, number> = {};
  before.forEach((e, i) => {
    const to = after[i]!.decision;
    if (keep(e) && e.decision !== to) expected[`${e.decision}→${to}`] = (expected[`${e.decision}→${to}`] ?? 0) + 1;
  });
  return expected;
}

interface Report {
  examined: number;
  replayed: number;
  changed: number;
  outcomeChanged: number;
  rebuiltCounts: number;
  transitions: { from: string; to: string; count: number; samples: string[]; detail?: string }[];
  outcomeChanges: { part: string; from: string; to: string; count: number; samples: string[] }[];
  skipped: { reason: string; count: number; samples: string[] }[];
}

const tps = (url: string, args: string[]) => runTps(args, { env: { DATABASE_URL: url } });

async function replayJson(t: ExecutionContext, url: string, args: string[], code = 0): Promise<Report> {
  const run = await tps(url, ['replay', ...args, '--format', 'json']);
  t.is(run.code, code, run.stderr);
  return JSON.parse(run.stdout) as Report;
}

const transitionsOf = (r: Report) => Object.fromEntries(r.transitions.map((x) => [`${x.from}→${x.to}`, x.count]));

function edited(t: ExecutionContext, edits: [file: string, from: string, to: string][]): TempConfig {
  const cfg = tempConfig({ fixtures: false });
  t.teardown(cfg.cleanup);
  for (const [file, from, to] of edits) cfg.replace(file, from, to);
  return cfg;
}

test('tps replay reports a changed challenge type, redaction, retryAfterSeconds and risk band, and --fail-on-change exits 3', async (t) => {
  const steps: Step[] = [
    {
      at: at(1),
      req: {
        operationKey: 'customer.read_pii',
        actor: { id: 'sup-1', authenticated: true, roles: ['support'] },
        resource: { type: 'customer', id: 'cus-1', classification: 'PII' },
        requestData: { requestedCount: 1 },
        session: { sessionId: 's-sup', ...calm },
      },
    },
    { at: at(2), req: payment('fin-1', 15_000) },
    { at: at(3), req: payment('fin-2', 100, { metadata: { velocityWindowCount: 30 } }) },
    { at: at(4), req: customerCreate('cus-2') },
  ];
  const store = await recorded(t, REPO_ROOT, steps);
  t.deepEqual(
    store.events.map((e) => [e.decision, e.riskBand]),
    [
      ['allow_redacted', 'low'],
      ['step_up_required', 'low'],
      ['throttle', 'low'],
      ['allow', 'low'],
    ],
  );
  const cfg = edited(t, [
    ['rules/pii-read.yaml', 'fields: [customer.email, customer.phone, customer.dateOfBirth, customer.address]', 'fields: [customer.email]'],
    ['rules/payments.yaml', 'challenge: proof_token', 'challenge: passkey'],
    ['rules/payments.yaml', 'retryAfterSeconds: 60', 'retryAfterSeconds: 120'],
    ['rules/standard.yaml', 'thresholds: { medium: 30,', 'thresholds: { medium: 1,'],
  ]);

  // No decision changes, yet every answer but one does: each part is reported with its sample.
  const report = await replayJson(t, store.url, [cfg.dir]);
  t.is(report.changed, 0);
  t.is(report.outcomeChanged, 4);
  t.deepEqual(
    report.outcomeChanges.map(({ part, from, to, count, samples }) => [part, from, to, count, samples]),
    [
      ['challenge', 'proof_token', 'passkey', 1, ['h-2']],
      ['redaction', 'mask [customer.address, customer.dateOfBirth, customer.email, customer.phone]', 'mask [customer.email]', 1, ['h-1']],
      ['retryAfterSeconds', '60', '120', 1, ['h-3']],
      ['riskBand', 'low', 'medium', 1, ['h-4']],
    ],
  );

  const text = await tps(store.url, ['replay', cfg.dir]);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /other answers that change \(same decision\): 4 of 4 /);
  t.regex(text.stdout, /\n {2}redaction: mask \[customer\.address, customer\.dateOfBirth, customer\.email, customer\.phone\] → mask \[customer\.email\]: 1 {3}e\.g\. h-1/);

  // --fail-on-change: 3 on any change, 0 when nothing changes.
  const failing = await tps(store.url, ['replay', cfg.dir, '--fail-on-change']);
  t.is(failing.code, 3, failing.stderr);
  const same = await replayJson(t, store.url, [REPO_ROOT, '--fail-on-change'], 0);
  t.is(same.changed + same.outcomeChanged, 0);
  const help = await tps(store.url, ['help']);
  t.regex(help.stdout, /tps replay .*\[--fail-on-change\]/);
});

test('tps replay rebuilds TPS velocity counts from the stored events when none was recorded or the window differs', async (t) => {
  const steps: Step[] = [
    ...[1, 2, 3, 4, 5, 6].map((s) => ({ at: at(s), req: payment('fin-1', 100) })),
    { at: at(2.5), req: payment('fin-2', 100) },
    { at: at(3.5), req: payment('fin-2', 100) },
    { at: at(5.5), req: customerCreate('cus-3') },
  ].sort((a, b) => a.at - b.at);
  const window = 'serviceWindow: { seconds: 60, max: 30 }';
  const none = edited(t, [['rules/payments.yaml', `  ${window}\n`, '']]);
  const twoSeconds = edited(t, [['rules/payments.yaml', window, 'serviceWindow: { seconds: 2, max: 30 }']]);
  const working = edited(t, [['rules/payments.yaml', window, 'serviceWindow: { seconds: 60, max: 3 }']]);
  const live = await decideLive(working.dir, steps);

  // Recorded without a window (no count): every payment's count is rebuilt, per actor.
  const noCount = await recorded(t, none.dir, steps);
  const expected = expectedTransitions(noCount.events, live);
  t.deepEqual(expected, { 'allow→throttle': 3 });
  const full = await replayJson(t, noCount.url, [working.dir]);
  t.deepEqual(transitionsOf(full), expected);
  t.is(full.rebuiltCounts, 8);
  const text = await tps(noCount.url, ['replay', working.dir]);
  t.regex(text.stdout, /velocity counts rebuilt from the stored events: 8 /);

  // --since: the events before it are counted too, so the first ones in range are not undercounted.
  const since = at(4);
  const fromFour = await replayJson(t, noCount.url, [working.dir, '--since', iso(4)]);
  t.is(fromFour.examined, 4);
  t.deepEqual(transitionsOf(fromFour), expectedTransitions(noCount.events, live, (e) => e.createdAt >= since));

  // Recorded over a 2 s window: those counts (3 at most) mean nothing over 60 s.
  const shortWindow = await recorded(t, twoSeconds.dir, steps);
  const rebuilt = await replayJson(t, shortWindow.url, [working.dir]);
  t.deepEqual(transitionsOf(rebuilt), expectedTransitions(shortWindow.events, live));
  t.is(rebuilt.rebuiltCounts, 8);

  // Recorded over the same window: the recorded counts stand.
  const sameWindow = await recorded(t, REPO_ROOT, steps);
  const kept = await replayJson(t, sameWindow.url, [working.dir]);
  t.deepEqual(transitionsOf(kept), expectedTransitions(sameWindow.events, live));
  t.is(kept.rebuiltCounts, 0);
});

test('a passed step-up retry replays as the live path answers it once the working tree no longer issues that challenge', async (t) => {
  const large = payment('fin-1', 15_000);
  const staleBank: EvaluateRequest = {
    operationKey: 'bank_account.update',
    actor: { id: 'cust-1', authenticated: true, roles: ['customer'] },
    resource: { type: 'account', id: 'acct-1', ownerId: 'cust-1' },
    session: { sessionId: 's-cust', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 900 },
    metadata: { changedFields: ['iban'] },
  };
  const steps: Step[] = [
    ...[1, 2, 3].map((s) => ({ at: at(s), req: payment('fin-1', 100) })),
    { at: at(4), req: large },
    { at: at(10), req: { ...large, metadata: { proofToken: 'tok-1' }, challengeResult: { type: 'proof_token', passed: true } } },
    // A passkey asked for a stale human signal; the retry comes with a fresh one, as a real one does.
    { at: at(20), req: staleBank },
    { at: at(30), req: { ...staleBank, session: { ...staleBank.session, recentHumanSignalAgeSeconds: 3 }, challengeResult: { type: 'passkey', passed: true } } },
  ];
  const store = await recorded(t, REPO_ROOT, steps);
  t.deepEqual(
    store.events.map((e) => e.decision),
    ['allow', 'allow', 'allow', 'step_up_required', 'allow', 'step_up_required', 'allow'],
  );

  // The tree as recorded: every retry is satisfied again by the challenge its request was issued again.
  const unchanged = await replayJson(t, store.url, [REPO_ROOT]);
  t.is(unchanged.changed + unchanged.outcomeChanged, 0, JSON.stringify(unchanged));

  // TPS's own window now throttles the challenged payment: no challenge, so its retry is counted and throttled too.
  const throttling = edited(t, [['rules/payments.yaml', 'serviceWindow: { seconds: 60, max: 30 }', 'serviceWindow: { seconds: 60, max: 3 }']]);
  const expected = expectedTransitions(store.events, await decideLive(throttling.dir, steps));
  t.deepEqual(expected, { 'step_up_required→throttle': 1, 'allow→throttle': 1 });
  const throttled = await replayJson(t, store.url, [throttling.dir]);
  t.deepEqual(transitionsOf(throttled), expected);
  t.deepEqual(throttled.transitions.find((x) => x.from === 'allow')?.samples, ['h-5']);
  t.is(throttled.rebuiltCounts, 1);

  // A passkey now, where the retry passed a proof token: challenge_invalid, and a fresh challenge.
  const passkey = edited(t, [['rules/payments.yaml', 'challenge: proof_token', 'challenge: passkey']]);
  const expectedPasskey = expectedTransitions(store.events, await decideLive(passkey.dir, steps));
  t.deepEqual(expectedPasskey, { 'allow→step_up_required': 1 });
  const asked = await replayJson(t, store.url, [passkey.dir]);
  t.deepEqual(transitionsOf(asked), expectedPasskey);
  t.deepEqual(asked.transitions[0]!.samples, ['h-5']);
});

const smallHistory = (t: ExecutionContext) =>
  recorded(
    t,
    REPO_ROOT,
    [1, 2, 3].map((s) => ({ at: at(s), req: customerCreate(`cus-${s}`) })),
    [bareEvent('ingested-1', { source: 'ingest', operationKey: 'vendor.delete', createdAt: at(4) })],
  );

test('tps replay refuses a mistyped --operation and an empty --since/--until window (exit 2)', async (t) => {
  const store = await smallHistory(t);

  const typo = await tps(store.url, ['replay', REPO_ROOT, '--operation', 'payment_transaction.craete']);
  t.is(typo.code, 2, typo.stdout);
  t.regex(typo.stderr, /--operation "payment_transaction\.craete".*did you mean "payment_transaction\.create"/);
  t.is(typo.stdout, '');
  // An operation the tree no longer defines is still one the store holds: replayed (here, an ingested event: skipped).
  const gone = await replayJson(t, store.url, [REPO_ROOT, '--operation', 'vendor.delete']);
  t.is(gone.examined, 1);

  for (const [since, until] of [
    ['2025-01-08', '2025-01-08'],
    ['2025-01-08', '2025-01-07T23:00:00Z'],
  ]) {
    const empty = await tps(store.url, ['replay', REPO_ROOT, '--since', since!, '--until', until!]);
    t.is(empty.code, 2, empty.stdout);
    t.regex(empty.stderr, /--until must be after --since/);
  }
});

test('tps replay counts a stored row it cannot read as a change to not_redecided and replays the rest', async (t) => {
  const store = await smallHistory(t);

  // One row that cannot be read is not the end of the replay; its answer is unknown, so it is a change, not a skip.
  await store.db.knex('events').where('telemetry_id', 'h-2').update({ reasons: 'not json' });
  const report = await replayJson(t, store.url, [REPO_ROOT]);
  t.is(report.examined, 4);
  t.is(report.replayed, 3);
  t.is(report.changed, 1);
  t.deepEqual(report.transitions, [{ from: 'allow', to: 'not_redecided', count: 1, samples: ['h-2'], detail: 'the stored row could not be read' }]);
  t.deepEqual(report.skipped.map((s) => s.samples), [['ingested-1']]);
});
