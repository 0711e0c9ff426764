import test, { type ExecutionContext } from 'ava';
import type { EvaluateRequest } from '../../src/api/types.js';
import { openDatabase } from '../../src/store/db.js';
import { runTps } from '../helpers/cli.js';
import { tempConfig } from '../helpers/config.js';
import { ingestRecord } from '../events/helpers.js';
import { freshDatabase, post, REPO_ROOT, startTps } from '../helpers/tps.js';

// `tps replay --fail-on-change` is the CI gate for "a policy change that must change nothing". A
// working tree that drops an operation, or keeps it out of the recorded environment with
// `environments:`, makes every live request for it a 422 unknown_operation: that is a change, and
// so is an event the replay cannot decide again. Events with nothing to compare (ingested) are not.
// The history is recorded by a real server over HTTP into a real SQLite store; replay runs as a user runs it.

interface Report {
  examined: number;
  replayed: number;
  changed: number;
  unchanged: number;
  skipped: { reason: string; count: number; samples: string[] }[];
  transitions: { from: string; to: string; count: number; samples: string[]; detail?: string }[];
  matrix: Record<string, Record<string, number>>;
}

const INGESTED = 'ingested: recorded with normalizedSignals only, not the inputs a policy reads';

const customerCreate = (id: string): EvaluateRequest => ({
  operationKey: 'customer.create',
  actor: { id: 'staff-1', authenticated: true, roles: ['staff'] },
  resource: { type: 'customer', id },
  session: { sessionId: 's-staff', continuityStrength: 0.95, recentHumanSignalAgeSeconds: 5 },
});

/** Four customer.create evaluations and one ingested customer.create event, recorded over HTTP; the store outlives the server. */
async function recordedOverHttp(t: ExecutionContext) {
  const db = freshDatabase('sqlite');
  t.teardown(db.drop);
  const server = await startTps({ databaseUrl: db.url });
  const evaluated: { telemetryId: string; decision: string }[] = [];
  try {
    for (let i = 1; i <= 4; i++) {
      const res = await post(`${server.url}/api/evaluate`, customerCreate(`cus-${i}`), server.secretKey);
      t.is(res.status, 200, JSON.stringify(res.body));
      evaluated.push({ telemetryId: res.body.telemetryId, decision: res.body.decision });
    }
    const ingested = ingestRecord({ operationKey: 'customer.create', resourceType: 'customer', decision: 'allow' });
    const res = await post(`${server.url}/api/events/ingest`, ingested, server.secretKey);
    t.true(res.status < 300, JSON.stringify(res.body));
    return { url: db.url, evaluated, ingestedId: ingested.telemetryId };
  } finally {
    await server.close();
  }
}

const replay = (url: string, args: string[]) => runTps(['replay', ...args], { env: { DATABASE_URL: url } });

async function replayJson(t: ExecutionContext, url: string, args: string[], code: number): Promise<Report> {
  const run = await replay(url, [...args, '--format', 'json']);
  t.is(run.code, code, run.stderr);
  return JSON.parse(run.stdout) as Report;
}

test('tps replay --fail-on-change exits 3 when the working tree keeps an operation out of the environment or removes it: each event changes to unknown_operation', async (t) => {
  const store = await recordedOverHttp(t);
  const decisions = [...new Set(store.evaluated.map((e) => e.decision))];
  t.deepEqual(decisions, ['allow']);
  const ids = store.evaluated.map((e) => e.telemetryId);

  // The tree as recorded changes nothing; the ingested event is a neutral skip either way.
  const same = await replayJson(t, store.url, [REPO_ROOT, '--fail-on-change'], 0);
  t.is(same.changed, 0);
  t.is(same.replayed, 4);
  t.deepEqual(same.skipped, [{ reason: INGESTED, count: 1, samples: [store.ingestedId] }]);

  const otherEnvironment = tempConfig({ fixtures: false });
  t.teardown(otherEnvironment.cleanup);
  otherEnvironment.write('operations/customer.create.yaml', `${otherEnvironment.read('operations/customer.create.yaml').trimEnd()}\nenvironments: [other]\n`);
  const removed = tempConfig({ fixtures: false });
  t.teardown(removed.cleanup);
  removed.remove('operations/customer.create.yaml');

  const detail = 'operation "customer.create" is not configured for environment "test" in the working tree';
  for (const cfg of [otherEnvironment, removed]) {
    const report = await replayJson(t, store.url, [cfg.dir, '--fail-on-change'], 3);
    t.is(report.examined, 5);
    t.is(report.replayed, 4);
    t.is(report.changed, 4);
    t.is(report.unchanged, 0);
    t.deepEqual(report.transitions, [{ from: 'allow', to: 'unknown_operation', count: 4, samples: ids, detail }]);
    t.deepEqual(report.matrix, { allow: { unknown_operation: 4 } });
    t.deepEqual(report.skipped, [{ reason: INGESTED, count: 1, samples: [store.ingestedId] }]);

    const text = await replay(store.url, [cfg.dir, '--fail-on-change']);
    t.is(text.code, 3, text.stderr);
    t.true(text.stdout.includes('replayed 4, skipped 1\n'), text.stdout);
    t.true(text.stdout.includes('decisions that change: 4 of 4 (100.0%; 4 to unknown_operation)\n'), text.stdout);
    t.true(text.stdout.includes(`\n  allow → unknown_operation: 4   e.g. ${ids.join(', ')}   (${detail})`), text.stdout);
    t.regex(text.stdout, /\n {2}allow +0 +4\n/);

    // Without the flag the same report, and exit 0: the flag only makes a change fail.
    const plain = await replay(store.url, [cfg.dir]);
    t.is(plain.code, 0, plain.stderr);
    t.is(plain.stdout, text.stdout);
  }
});

test('tps replay --fail-on-change exits 3 on an event it cannot decide again (not_redecided); an unreadable ingested one stays a skip', async (t) => {
  const store = await recordedOverHttp(t);
  const second = store.evaluated[1]!;
  const db = await openDatabase(store.url);
  try {
    await db.knex('events').whereIn('telemetry_id', [second.telemetryId, store.ingestedId]).update({ reasons: 'not json' });
  } finally {
    await db.close();
  }

  const report = await replayJson(t, store.url, [REPO_ROOT, '--fail-on-change'], 3);
  t.is(report.replayed, 4);
  t.is(report.changed, 1);
  t.is(report.unchanged, 3);
  t.deepEqual(report.transitions, [{ from: second.decision, to: 'not_redecided', count: 1, samples: [second.telemetryId], detail: 'the stored row could not be read' }]);
  t.deepEqual(report.skipped, [{ reason: INGESTED, count: 1, samples: [store.ingestedId] }]);

  const text = await replay(store.url, [REPO_ROOT, '--fail-on-change']);
  t.is(text.code, 3, text.stderr);
  t.true(text.stdout.includes('decisions that change: 1 of 4 (25.0%; 1 to not_redecided)\n'), text.stdout);
  t.true(text.stdout.includes(`\n  allow → not_redecided: 1   e.g. ${second.telemetryId}   (the stored row could not be read)`), text.stdout);
});
