import fs from 'node:fs';
import os from 'node:os';
import test, { type ExecutionContext } from 'ava';
import { parseMetrics } from '../../bench/serverMetrics.js';
import type { EvaluateResponse } from '../../src/api/types.js';
import type { Advisor } from '../../src/ai/advisor.js';
import { EvaluationThread, restartDelayMs, THREAD_NAME } from '../../src/evaluate/thread.js';
import { generateKey } from '../../src/auth/keys.js';
import { tempConfig } from '../helpers/config.js';
import { cpuQuotaGroup } from '../helpers/cgroup.js';
import { allowedCpus, runningServer, threadNames, type Placement } from '../helpers/script.js';
import { capturedLogs, freshDatabase, get, post, startTps, threadGcByKind, type RunningTps, type StoreKind } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// POST /api/evaluate runs in the evaluation thread (src/evaluate/thread.ts) or in the HTTP thread
// (TPS_EVALUATE_THREAD). The two must be indistinguishable to a caller and in the Decision Logs.

const REQUESTS = [samples.createCustomer(), samples.bankUpdate(), samples.bulkExport(), samples.readPii(['support']), samples.readPii([]), samples.payment(25)];

// What differs between two evaluations of one request: ids and times.
const stable = (r: EvaluateResponse) => ({ ...r, telemetryId: undefined, challenge: r.challenge && { type: r.challenge.type } });
const stableEvent = (e: Record<string, unknown> & { explanation: Record<string, unknown> }) => ({
  ...e,
  seq: undefined,
  telemetryId: undefined,
  createdAt: undefined,
  explanation: { ...e.explanation, challenge: (e.explanation.challenge as { type?: string } | undefined)?.type },
});

async function evaluateAll(tps: RunningTps) {
  const out = [];
  for (const body of REQUESTS) {
    const res = await post(`${tps.url}/api/evaluate`, body, tps.secretKey);
    const event = await tps.tps.events.get(tps.environment, res.body.telemetryId);
    out.push({ status: res.status, type: res.headers.get('content-type'), response: res.body as EvaluateResponse, event });
  }
  return out;
}

for (const store of ['sqlite', 'postgres'] as StoreKind[]) {
  test(`[${store}] the evaluation thread and the HTTP thread give the same answers and store the same events`, async (t) => {
    const threaded = await startTps({ store, env: { TPS_EVALUATE_THREAD: 'true' } });
    const inline = await startTps({ store, env: { TPS_EVALUATE_THREAD: 'false' } });
    try {
      t.truthy(threaded.tps.evaluationThread);
      t.falsy(threaded.tps.evaluator);
      t.truthy(inline.tps.evaluator);
      t.falsy(inline.tps.evaluationThread);
      // An explicit setting wins over the store's default, and /metrics reports it.
      t.regex((await get(`${threaded.url}/metrics`)).body as string, /^tps_evaluation_thread 1$/m);
      t.regex((await get(`${inline.url}/metrics`)).body as string, /^tps_evaluation_thread 0$/m);
      const [a, b] = [await evaluateAll(threaded), await evaluateAll(inline)];
      t.deepEqual(
        a.map((x) => x.response.decision),
        ['allow', 'step_up_required', 'allow_redacted', 'allow_redacted', 'deny', 'throttle'],
      );
      for (let i = 0; i < REQUESTS.length; i++) {
        t.is(a[i]!.status, 200);
        t.is(b[i]!.status, 200);
        t.is(a[i]!.type, 'application/json; charset=utf-8');
        t.is(b[i]!.type, 'application/json; charset=utf-8');
        t.deepEqual(stable(a[i]!.response), stable(b[i]!.response));
        t.truthy(a[i]!.event, 'the threaded answer was committed before it was sent');
        t.deepEqual(stableEvent(a[i]!.event as never), stableEvent(b[i]!.event as never));
      }
      // A client's mistakes come back from the thread as the same errors.
      for (const tps of [threaded, inline]) {
        t.is((await post(`${tps.url}/api/evaluate`, '{"operationKey": ', tps.secretKey)).body.error.code, 'invalid_json');
        t.deepEqual((await post(`${tps.url}/api/evaluate`, '{"__proto__": {"x": 1}}', tps.secretKey)).body.error.details, [{ path: '__proto__', message: '__proto__ is a key named __proto__, which is not accepted' }]);
        const invalid = await post(`${tps.url}/api/evaluate`, { operationKey: 'customer.create', actor: {} }, tps.secretKey);
        t.is(invalid.status, 400);
        t.deepEqual(
          invalid.body.error.details.map((d: { path: string }) => d.path),
          ['actor.id', 'resource'],
        );
        const unknown = await post(`${tps.url}/api/evaluate`, { ...samples.createCustomer(), operationKey: 'nope' }, tps.secretKey);
        t.is(unknown.status, 422);
        t.is(unknown.body.error.code, 'unknown_operation');
      }
    } finally {
      await threaded.close();
      await inline.close();
    }
  });
}

// Under concurrency the thread sends replies in groups ('replies'); each must still reach its own request.
test('concurrent evaluations in the thread each get their own answer and event', async (t) => {
  const tps = await startTps({ env: { TPS_EVALUATE_THREAD: 'true' } });
  try {
    const expected = ['allow', 'step_up_required', 'allow_redacted', 'allow_redacted', 'deny'];
    const bodies = Array.from({ length: 60 }, (_, i) => ({ ...REQUESTS[i % expected.length]!, actor: { ...REQUESTS[i % expected.length]!.actor, id: `concurrent-${i}` } }));
    const answers = await Promise.all(bodies.map((body) => post(`${tps.url}/api/evaluate`, body, tps.secretKey)));
    for (const [i, res] of answers.entries()) {
      t.is(res.status, 200);
      t.is(res.body.decision, expected[i % expected.length]);
      t.is(res.body.operationKey, bodies[i]!.operationKey);
      const event = await tps.tps.events.get(tps.environment, res.body.telemetryId);
      t.is(event?.actorId, `concurrent-${i}`, 'the event stored under this answer is this request\'s');
    }
  } finally {
    await tps.close();
  }
});

test('the evaluation thread names itself, so that top -H and the benchmark tell it apart', async (t) => {
  const tps = await startTps({ env: { TPS_EVALUATE_THREAD: 'true' } });
  try {
    t.is((await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey)).status, 200);
    t.true(threadNames().includes(THREAD_NAME), threadNames().join(' '));
  } finally {
    await tps.close();
  }
});

test('TPS_EVALUATE_THREAD=auto (the default) evaluates in the thread with SQLite and in the HTTP thread with PostgreSQL', async (t) => {
  const sqlite = await startTps({ store: 'sqlite' });
  const postgres = await startTps({ store: 'postgres' });
  try {
    // On one CPU auto keeps SQLite in the HTTP thread too: the test below starts a server so.
    t.true(os.availableParallelism() > 1, 'this test needs a machine with more than one CPU');
    t.truthy(sqlite.tps.evaluationThread);
    t.falsy(postgres.tps.evaluationThread);
    t.truthy(postgres.tps.evaluator);
    for (const tps of [sqlite, postgres]) t.is((await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey)).status, 200);
    // /metrics says which way `auto` went (the benchmark reports it).
    t.regex((await get(`${sqlite.url}/metrics`)).body as string, /^tps_evaluation_thread 1$/m);
    t.regex((await get(`${postgres.url}/metrics`)).body as string, /^tps_evaluation_thread 0$/m);
    // One process commits its own events (a SQLite cluster worker says writer="primary": test/cluster).
    for (const tps of [sqlite, postgres]) t.regex((await get(`${tps.url}/metrics`)).body as string, /^tps_event_writer\{writer="self"\} 1$/m);
  } finally {
    await sqlite.close();
    await postgres.close();
  }
});

/**
 * The server placed as a container would be, on SQLite: where it evaluates, by the process itself
 * (a tps-eval thread or none) and by what it says (its log line, /metrics), and that it answers.
 */
async function evaluatesWhere(t: ExecutionContext, place: Placement, env: Record<string, string>, expected: { thread: boolean; cpus: number }, check: (pid: number) => void) {
  const db = freshDatabase('sqlite');
  const secretKey = generateKey('secret');
  try {
    const server = await runningServer({ DATABASE_URL: db.url, TPS_SECRET_KEY: secretKey, TPS_ENVIRONMENT: 'test', ...env }, place);
    try {
      check(server.pid);
      const names = threadNames(server.pid);
      t.is(names.includes(THREAD_NAME), expected.thread, names.join(' '));
      t.regex(server.stdout, new RegExp(`"evaluationThread":${expected.thread},"cpus":${expected.cpus}[^\\n]*"msg":"TPS listening"`));
      const url = `http://127.0.0.1:${server.port}`;
      t.regex((await get(`${url}/metrics`)).body as string, new RegExp(`^tps_evaluation_thread ${expected.thread ? 1 : 0}$`, 'm'));
      const res = await post(`${url}/api/evaluate`, samples.createCustomer(), secretKey);
      t.is(res.status, 200);
      t.is((res.body as EvaluateResponse).decision, 'allow');
    } finally {
      await server.stop();
    }
  } finally {
    await db.drop();
  }
}

// The server started allowed one CPU (taskset), as in a container pinned to one: auto evaluates in
// the HTTP thread even with SQLite; `true` still starts the thread.
for (const [setting, thread] of [['auto', false], ['true', true]] as const) {
  test(`on one CPU, TPS_EVALUATE_THREAD=${setting} with SQLite evaluates ${thread ? 'in the thread' : 'in the HTTP thread'}`, async (t) => {
    await evaluatesWhere(t, { cpus: '0' }, { TPS_EVALUATE_THREAD: setting }, { thread, cpus: 1 }, (pid) => t.is(allowedCpus(pid), '0'));
  });
}

// As a container run with `docker run --cpus=1` on a larger host: every CPU in the affinity mask,
// one CPU's worth of time in the cgroup's quota. Node 20's os.availableParallelism() sees the mask
// only; auto counts the quota too (src/config/cpus.ts).
test('in a cgroup with a quota of one CPU, TPS_EVALUATE_THREAD=auto evaluates in the HTTP thread though every CPU is allowed', async (t) => {
  t.true(os.availableParallelism() > 1, 'this test needs a machine with more than one CPU');
  const group = cpuQuotaGroup(1);
  try {
    await evaluatesWhere(t, { cgroup: group.dir }, {}, { thread: false, cpus: 1 }, (pid) => {
      t.true(fs.readFileSync(`${group.dir}/cgroup.procs`, 'utf8').split('\n').includes(String(pid)));
      t.is(allowedCpus(pid), allowedCpus('self'));
    });
  } finally {
    await group.remove();
  }
});

// tps_evaluation_thread_failures_total, read from /metrics as the benchmark reads a scrape.
const threadFailures = async (tps: RunningTps) => parseMetrics((await get(`${tps.url}/metrics`)).body as string).get('tps_evaluation_thread_failures_total');

/** Asks `done` every 50 ms until it says yes or five seconds have passed (a held-back thread starts within two). */
const until = async (done: () => Promise<boolean>): Promise<void> => {
  for (const start = Date.now(); !(await done()) && Date.now() - start < 5000; ) await new Promise((r) => setTimeout(r, 50));
};

test('an evaluation thread that stops is started again, and says so in the log and on /metrics', async (t) => {
  const { logger, lines } = capturedLogs('error');
  const tps = await startTps({ logger });
  try {
    const evaluate = () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
    t.is((await evaluate()).status, 200);
    t.is(await threadFailures(tps), 0);
    await tps.tps.evaluationThread!.kill();
    const after = await evaluate();
    t.is(after.status, 200, JSON.stringify(after.body));
    t.truthy(await tps.tps.events.get(tps.environment, after.body.telemetryId));
    const logged = lines.map((l) => JSON.parse(l) as { msg: string; err?: { message: string } });
    // Once per thread that ended, however it ended.
    t.is(logged.filter((l) => l.msg.includes('evaluation thread')).length, 1, lines.join(''));
    t.true(logged.some((l) => l.msg.includes('evaluation thread') && l.err?.message.includes('stopped')), lines.join(''));
    t.is(await threadFailures(tps), 1);
  } finally {
    await tps.close();
  }
});

test('restartDelayMs: a single death is mended at once; a thread that keeps dying young backs off to 30 s', (t) => {
  t.deepEqual([0, 1, 2, 3, 4, 6, 7, 50].map(restartDelayMs), [0, 0, 1000, 2000, 4000, 16_000, 30_000, 30_000]);
});

// Two young deaths in a row (threads killed before they were ready): the next thread is held back
// a second. Meanwhile evaluate says when to come back and stores nothing, and a reload is the source
// the held-back thread starts from.
test('a thread that keeps dying young is started again after a while; meanwhile evaluate answers 503 with retry-after', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const { logger, lines } = capturedLogs('error');
  const tps = await startTps({ logger, configDir: cfg.dir });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
  });
  const thread = tps.tps.evaluationThread!;
  // Below the payments policy's step-up threshold (10000) until the reload lowers it to 5000.
  const payment = { ...samples.payment(0), requestData: { amount: 7000, currency: 'EUR' } };
  const evaluate = () => post(`${tps.url}/api/evaluate`, payment, tps.secretKey);
  t.is((await evaluate()).body.decision, 'allow');
  const stored = () => tps.tps.events.count();
  const before = await stored();

  // The first thread has lived past YOUNG_DEATH_MS, so its death starts no count, however slow the
  // machine; each successor is killed before it is ready: the second young death is held back.
  await new Promise((r) => setTimeout(r, 1100));
  await thread.kill();
  await thread.kill();
  await thread.kill();
  // Both asked at once, within the second the successor is held back: one after the other, on a
  // busy machine, /readyz was once asked after the successor had started.
  const [held, notReady] = await Promise.all([evaluate(), get(`${tps.url}/readyz`)]);
  t.is(held.status, 503, JSON.stringify(held.body));
  t.is(held.body.error.code, 'evaluation_unavailable');
  t.regex(held.body.error.message, /retry in 1 s/);
  t.is(held.headers.get('retry-after'), '1');
  t.is(await stored(), before, 'nothing stored for a 503');
  // A load balancer reading /readyz takes the instance out meanwhile.
  t.is(notReady.status, 503);
  t.like(notReady.body, { status: 'not_ready', store: { status: 'ok' }, evaluation: { status: 'restarting', retryAfterSeconds: 1 } });
  t.is(notReady.headers.get('retry-after'), '1');

  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  t.true((await tps.tps.config.reload()).ok);
  let after = held;
  await until(async () => (after = await evaluate()).status !== 503);
  t.is(after.status, 200, JSON.stringify(after.body));
  t.not(after.body.decision, 'allow', 'the reload in the gap is in force');
  t.is(after.body.policyVersionId, tps.tps.config.current().policies.get('payments')!.versionId);
  t.truthy(await tps.tps.events.get(tps.environment, after.body.telemetryId));
  t.like((await get(`${tps.url}/readyz`)).body, { status: 'ready', evaluation: { status: 'ok' } });
  t.is(lines.filter((l) => l.includes('evaluation thread')).length, 3, lines.join(''));
  t.is(await threadFailures(tps), 3);
});

// A successor that cannot even be spawned (`new Worker` throws at once: here, because the source it
// would start from cannot be cloned into it) is reported and held back like a thread that died
// young, where a throw out of the exit handler's timer would have ended the process.
test('a successor whose spawn throws is reported, held back and started again later', async (t) => {
  const { logger, lines } = capturedLogs('error');
  const tps = await startTps({ logger });
  t.teardown(() => tps.close());
  const thread = tps.tps.evaluationThread!;
  const evaluate = () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
  t.is((await evaluate()).status, 200);
  const good = tps.tps.config.current().source;

  // As in the test above: the third death in a row is the second young one, held back a second.
  await new Promise((r) => setTimeout(r, 1100));
  await thread.kill();
  await thread.kill();
  await thread.kill();
  t.is((await evaluate()).status, 503);
  // With no thread running, a reload only sets the source the held-back successor starts from.
  await thread.setCatalog({ ...good, poison: () => undefined } as never);
  await until(async () => (await threadFailures(tps)) === 4);
  t.is(await threadFailures(tps), 4, lines.join(''));
  t.true(lines.some((l) => l.includes('could not be cloned')), lines.join(''));
  // Held back again (two seconds, the third young death), so still unavailable, not crashed.
  const held = await evaluate();
  t.is(held.status, 503, JSON.stringify(held.body));

  await thread.setCatalog(good);
  let after = held;
  await until(async () => (after = await evaluate()).status !== 503);
  t.is(after.status, 200, JSON.stringify(after.body));
  t.truthy(await tps.tps.events.get(tps.environment, after.body.telemetryId));
  t.is(await threadFailures(tps), 4);
});

// The first thread's failure is the start-up's (createTps rejects with it): nothing to mend. What
// is observable from here is that no crash is reported; not starting a successor is the same early
// return in the exit handler, and a spawn is not visible without a hook the class does not need.
test('a first evaluation thread that cannot start rejects ready and is not reported as a crash', async (t) => {
  const failures: Error[] = [];
  // A source the thread cannot compile; the advisor is never asked, as nothing is evaluated.
  const thread = new EvaluationThread({ source: { operations: null } as never, redisPrefix: 'unused:', challengeTtlMs: 1000 }, {} as Advisor, (err) => failures.push(err));
  // The thread's error crosses over as a plain object (another realm's TypeError).
  await t.throwsAsync(thread.ready, { any: true, message: /not iterable/ });
  // A successor would start from the same source and die as fast: give it the time to.
  await new Promise((r) => setTimeout(r, 1500));
  t.deepEqual(failures, []);
  await thread.close();
});

// The histogram of answers per message from the thread (src/evaluate/outbox.ts), from /metrics.
type ReplyGroups = { messages: number; answers: number; upTo7: number; upTo8: number };
async function replyGroups(tps: RunningTps): Promise<ReplyGroups> {
  const text = (await get(`${tps.url}/metrics`)).body as string;
  const read = (series: string) => Number(new RegExp(`^tps_evaluation_thread_replies_per_message_${series} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { messages: read('count'), answers: read('sum'), upTo7: read('bucket\\{le="7"\\}'), upTo8: read('bucket\\{le="8"\\}') };
}
const since = (a: ReplyGroups, b: ReplyGroups): ReplyGroups => ({ messages: b.messages - a.messages, answers: b.answers - a.answers, upTo7: b.upTo7 - a.upTo7, upTo8: b.upTo8 - a.upTo8 });

test('a burst of evaluations comes back from the thread in groups of at most eight, each answer committed', async (t) => {
  const tps = await startTps({ env: { TPS_EVALUATE_THREAD: 'true' } });
  try {
    const thread = tps.tps.evaluationThread!;
    // Handed over in one turn, as a busy HTTP thread does: the thread finds them all waiting.
    const burst = 48;
    const text = JSON.stringify(samples.createCustomer());
    let before = await replyGroups(tps);
    const evaluated = await Promise.all(Array.from({ length: burst }, () => thread.evaluate(tps.environment, text)));
    t.deepEqual(new Set(evaluated.map((e) => JSON.parse(e.answer.json).decision)), new Set(['allow']));
    let groups = since(before, await replyGroups(tps));
    t.is(groups.answers, burst, 'every answer came back once');
    t.is(groups.upTo8, groups.messages, `no group above eight: ${JSON.stringify(groups)}`);
    t.true(groups.upTo8 > groups.upTo7, `a group of eight: ${JSON.stringify(groups)}`);

    // Over HTTP, as they arrive: every answer's event is committed before it is sent.
    before = await replyGroups(tps);
    const answers = await Promise.all(Array.from({ length: burst }, () => post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey)));
    t.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
    for (const a of answers) t.truthy(await tps.tps.events.get(tps.environment, a.body.telemetryId));
    groups = since(before, await replyGroups(tps));
    t.is(groups.answers, burst);
    t.is(groups.upTo8, groups.messages, JSON.stringify(groups));
  } finally {
    await tps.close();
  }
});

// The thread's heap is not the HTTP thread's, whose collections prom-client reports as
// tps_nodejs_gc_duration_seconds: the thread's are asked of it at each scrape.
const threadGc = async (tps: RunningTps) => threadGcByKind((await get(`${tps.url}/metrics`)).body as string);

test("the evaluation thread's garbage collection is on /metrics, apart from the HTTP thread's", async (t) => {
  const threaded = await startTps({ env: { TPS_EVALUATE_THREAD: 'true' } });
  const inline = await startTps({ env: { TPS_EVALUATE_THREAD: 'false' } });
  try {
    // An evaluation allocates ~30 KB in the thread, whose young generation is 8 MB: a few hundred
    // fill it. Each round is a burst over HTTP; the thread reports its scavenges at the next scrape.
    let gc = await threadGc(threaded);
    for (let round = 0; round < 20 && !gc.minor; round++) {
      const answers = await Promise.all(Array.from({ length: 200 }, () => post(`${threaded.url}/api/evaluate`, samples.createCustomer(), threaded.secretKey)));
      t.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      gc = await threadGc(threaded);
    }
    t.true(gc.minor! > 0, `the thread's scavenges were counted: ${JSON.stringify(gc)}`);
    // A counter: a later scrape reads at least as much (the thread reports what it had not yet).
    t.true((await threadGc(threaded)).minor! >= gc.minor!);
    // Evaluating in the HTTP thread, there is no such thread to report: no series at all.
    t.is((await post(`${inline.url}/api/evaluate`, samples.createCustomer(), inline.secretKey)).status, 200);
    t.deepEqual(await threadGc(inline), {});
  } finally {
    await threaded.close();
    await inline.close();
  }
});

// The histogram counts answers: a reload's reply, even the rare one that fails, is not one.
test('a reload the thread refuses counts in no reply group, and a successor starts from the source before it', async (t) => {
  const tps = await startTps({ env: { TPS_EVALUATE_THREAD: 'true' } });
  try {
    const thread = tps.tps.evaluationThread!;
    const before = await replyGroups(tps);
    // A source the thread cannot compile: its reply to the reload is `failed`.
    await t.throwsAsync(thread.setCatalog({ operations: null } as never));
    t.deepEqual(since(before, await replyGroups(tps)), { messages: 0, answers: 0, upTo7: 0, upTo8: 0 });
    t.is((await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey)).status, 200);
    t.like(since(before, await replyGroups(tps)), { messages: 1, answers: 1 });
    // A successor starts from the last source the thread took, not the one it refused.
    await thread.kill();
    t.is((await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey)).status, 200);
  } finally {
    await tps.close();
  }
});

// Server-Timing's parts, from a header such as `evaluate;dur=0.812, commit;dur=1.034, total;dur=1.846`.
function timing(header: string | null): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of (header ?? '').split(',')) {
    const m = /^\s*(\w+);dur=(\d+\.\d{3})\s*$/.exec(part);
    if (m) out[m[1]!] = Number(m[2]);
  }
  return out;
}

// TPS_SERVER_TIMING splits an answer's time in TPS into the evaluation and the wait for its commit.
// Another connection holds SQLite's write lock for a while, so the commit, and only the commit,
// waits: a split that put the wait on the wrong side, or missed it, fails. The checkpointer's bulks
// (every 100 ms) go on meanwhile, and the header says how long they ran during that wait.
for (const mode of ['true', 'false']) {
  test(`TPS_SERVER_TIMING (TPS_EVALUATE_THREAD=${mode}) puts the wait for the commit under commit`, async (t) => {
    const tps = await startTps({ env: { TPS_EVALUATE_THREAD: mode, TPS_SERVER_TIMING: 'true' } });
    const plain = await startTps({ env: { TPS_EVALUATE_THREAD: mode } });
    const sqlite3 = (await import('sqlite3')).default;
    const holder = new sqlite3.Database(tps.databaseUrl.slice('sqlite:'.length));
    const exec = (sql: string) => new Promise<void>((resolve, reject) => holder.exec(sql, (err) => (err ? reject(err) : resolve())));
    try {
      const quick = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      t.is(quick.status, 200);
      const q = timing(quick.headers.get('server-timing'));
      t.deepEqual(Object.keys(q), ['evaluate', 'commit', 'total', 'bulk', 'filesync', 'catchup']);
      t.true(Math.abs(q.evaluate! + q.commit! - q.total!) <= 0.002, JSON.stringify(q));
      for (const part of ['bulk', 'filesync', 'catchup']) t.true(q[part]! >= 0 && q[part]! <= q.commit! + 0.001, JSON.stringify(q));

      // Long against what the request may take to reach the commit on a loaded machine (the whole
      // suite runs at once): the commit must wait at least half of it, the evaluation a quarter at most.
      const HELD_MS = 1000;
      await exec('BEGIN IMMEDIATE');
      const started = performance.now();
      const release = new Promise((resolve) => setTimeout(resolve, HELD_MS)).then(() => exec('COMMIT'));
      const held = await post(`${tps.url}/api/evaluate`, samples.createCustomer(), tps.secretKey);
      const roundTrip = performance.now() - started;
      await release;
      t.is(held.status, 200, JSON.stringify(held.body));
      t.truthy(await tps.tps.events.get(tps.environment, held.body.telemetryId));
      const h = timing(held.headers.get('server-timing'));
      t.true(h.commit! >= HELD_MS * 0.5, `the commit waited for the lock: ${JSON.stringify(h)}`);
      t.true(h.evaluate! < HELD_MS * 0.25, `the evaluation did not: ${JSON.stringify(h)}`);
      t.true(h.total! <= roundTrip, `TPS's part fits in the client's round trip (${roundTrip} ms): ${JSON.stringify(h)}`);
      t.true(h.bulk! > 0 && h.bulk! < h.commit!, `bulk checkpoints ran during the wait, not all of it: ${JSON.stringify(h)}`);

      // A client's mistake, and a service without the setting, send no such header.
      t.is((await post(`${tps.url}/api/evaluate`, '{"operationKey": ', tps.secretKey)).headers.get('server-timing'), null);
      const off = await post(`${plain.url}/api/evaluate`, samples.createCustomer(), plain.secretKey);
      t.is(off.status, 200);
      t.is(off.headers.get('server-timing'), null);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
      await tps.close();
      await plain.close();
    }
  });
}

// The group commit waits for evaluations under way (TPS_COMMIT_WAIT_MS), so one that fails must
// say it will bring no event. With a wait of a minute, a failed evaluation that did not would hold
// the next answer past ava's timeout; no time is measured.
for (const thread of ['true', 'false']) {
  test(`[sqlite] evaluations that fail do not hold the next commit (TPS_EVALUATE_THREAD=${thread})`, async (t) => {
    const tps = await startTps({ env: { TPS_EVALUATE_THREAD: thread, TPS_COMMIT_WAIT_MS: '60000' } });
    try {
      const failed = await Promise.all([post(`${tps.url}/api/evaluate`, { operationKey: 'customer.create' }, tps.secretKey), post(`${tps.url}/api/evaluate`, { ...samples.createCustomer(), operationKey: 'no.such_operation' }, tps.secretKey)]);
      t.deepEqual(
        failed.map((r) => r.status),
        [400, 422],
      );
      const answered = await Promise.all(REQUESTS.map((body) => post(`${tps.url}/api/evaluate`, body, tps.secretKey)));
      t.deepEqual(
        answered.map((r) => r.status),
        REQUESTS.map(() => 200),
      );
      for (const res of answered) t.truthy(await tps.tps.events.get(tps.environment, res.body.telemetryId));
    } finally {
      await tps.close();
    }
  });
}
