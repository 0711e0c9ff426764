import test from 'ava';
import { runSeeds } from '../../src/cli/commands/seed.js';
import { loadCatalog } from '../../src/policy/catalog.js';
import { replay, type ReplayReport } from '../../src/replay/replay.js';
import type { Explanation } from '../../src/api/types.js';
import { SKIP_INGESTED, SKIP_NO_FACTS } from '../../src/replay/recorded.js';
import { fromRow, KnexEventStore, type EventRecord, type EventRow, type StoredEvent } from '../../src/store/eventStore.js';
import { runCli } from '../helpers/cli.js';
import { bareEvent } from '../helpers/events.js';
import { openFreshStore, tempConfig } from '../helpers/config.js';
import { REPO_ROOT, type StoreKind } from '../helpers/tps.js';

// Replay on a seeded store with a known policy change: the transition counts must be exactly those
// an independent reading of the stored facts predicts, in SQLite and in PostgreSQL alike.

const END = Date.UTC(2025, 0, 8);
const COUNT = 1500;

/** Three edits with predictable effects on the recorded history. */
function changedConfig() {
  const cfg = tempConfig({ fixtures: false });
  cfg.replace('rules/payments.yaml', 'value: 10000', 'value: 5000');
  cfg.replace('rules/standard.yaml', 'stepUp: 60, deny: 85', 'stepUp: 40, deny: 85');
  cfg.replace('rules/finance-export.yaml', 'greaterThanInclusive, value: 1000', 'greaterThanInclusive, value: 500');
  return cfg;
}

/**
 * What the edits must change, read straight from the stored facts: not from the replay code.
 * First evaluations gain step-ups; a satisfied retry stays allowed unless the challenge it passed
 * would no longer be asked: a payment of 5000 to 10000 challenged for its score got a passkey, and
 * now gets the proof token of the large-payment rule, so its passkey retry is challenge_invalid. A
 * redaction applies to any allowed export, retry or not.
 */
function predict(events: StoredEvent[]): Map<string, number> {
  const expected = new Map<string, number>();
  const add = (k: string) => expected.set(k, (expected.get(k) ?? 0) + 1);
  for (const e of events) {
    if (e.source !== 'evaluate' || e.decision !== 'allow') continue;
    const f = e.explanation.facts as { requestData: { amount?: number }; metadata: { requestedCount: number } };
    const retry = e.explanation.challengeResult !== undefined;
    const passed = (e.requestSummary.challengeResult as { type?: string } | undefined)?.type;
    const midAmount = () => f.requestData.amount! >= 5000 && f.requestData.amount! < 10000;
    if (e.operationKey === 'payment_transaction.create' && midAmount() && (!retry || (e.explanation.challengeResult === 'satisfied' && passed === 'passkey'))) add('allow→step_up_required');
    if (e.operationKey === 'customer.create' && !retry && e.score >= 40) add('allow→step_up_required');
    if (e.operationKey === 'invoice.export' && f.metadata.requestedCount >= 500 && f.metadata.requestedCount < 1000) add('allow→allow_redacted');
  }
  return expected;
}

const transitionsOf = (r: ReplayReport) => new Map(r.transitions.map((t) => [`${t.from}→${t.to}`, t.count]));

async function seededStore(store: StoreKind) {
  const { db, url, close } = await openFreshStore(store);
  await runSeeds(db.knex, { configDir: REPO_ROOT, environment: 'test', count: COUNT, endMs: END });
  // Events with nothing to compare, each skipped with its reason: an ingested one (it carries
  // normalizedSignals, not the inputs a policy reads), one without facts. And one of an operation
  // gone, which live would answer 422 unknown_operation: a change, not a skip.
  const other = (telemetryId: string, source: 'ingest' | 'evaluate', operationKey: string, explanation: Explanation): EventRecord =>
    bareEvent(telemetryId, { source, createdAt: END - 1000, operationKey, explanation });
  await new KnexEventStore(db).insertBatch([
    other('ingested-1', 'ingest', 'customer.create', { signals: [], rules: [], normalizedSignals: { weak_session_continuity: 0.2 } }),
    other('no-facts-1', 'evaluate', 'customer.create', { signals: [], rules: [] }),
    other('gone-1', 'evaluate', 'vendor.delete', { signals: [], rules: [], facts: { operation: { key: 'vendor.delete' }, actor: { id: 'a' }, resource: { type: 'vendor', id: 'v' } } }),
  ]);
  return { db, url, close };
}

const results = new Map<StoreKind, { unchanged: ReplayReport; changed: ReplayReport }>();

for (const store of ['sqlite', 'postgres'] as const) {
  test.serial(`${store}: replay reports exactly the predicted transitions of a known policy change`, async (t) => {
    const { db, url, close } = await seededStore(store);
    const cfg = changedConfig();
    t.teardown(async () => {
      cfg.cleanup();
      await close();
    });
    const rows: EventRow[] = await db.knex('events').orderBy('seq');
    const events = rows.map(fromRow);
    t.is(events.length, COUNT + 3);

    // The working tree as recorded: nothing changes but the operation gone; what is skipped says why.
    const gone = { from: 'allow', to: 'unknown_operation', count: 1, samples: ['gone-1'], detail: 'operation "vendor.delete" is not configured for environment "test" in the working tree' };
    const unchanged = await replay(db.knex, loadCatalog(REPO_ROOT));
    t.is(unchanged.examined, COUNT + 3);
    t.is(unchanged.replayed, COUNT + 1);
    t.is(unchanged.changed, 1);
    t.deepEqual(unchanged.transitions, [gone]);
    t.deepEqual(unchanged.skipped, [
      { reason: SKIP_INGESTED, count: 1, samples: ['ingested-1'] },
      { reason: SKIP_NO_FACTS, count: 1, samples: ['no-facts-1'] },
    ]);

    const expected = predict(events).set('allow→unknown_operation', 1);
    t.true(expected.get('allow→step_up_required')! > 20 && expected.get('allow→allow_redacted')! > 5, JSON.stringify([...expected]));
    const changed = await replay(db.knex, loadCatalog(cfg.dir));
    t.deepEqual(transitionsOf(changed), expected);
    t.is(changed.changed, [...expected.values()].reduce((a, b) => a + b, 0));
    t.is(changed.unchanged + changed.changed, changed.replayed);
    for (const tr of changed.transitions) t.is(tr.samples.length, Math.min(5, tr.count));
    // The diagonal of the matrix is every decision that stayed.
    t.is(Object.entries(changed.matrix).reduce((n, [from, row]) => n + (row[from] ?? 0), 0), changed.unchanged);

    // The cursor loop reads page by page: a tiny page gives the same answer.
    t.deepEqual(transitionsOf(await replay(db.knex, loadCatalog(cfg.dir), { pageSize: 7 })), expected);

    // Filters: operation, time window, limit.
    const payments = await replay(db.knex, loadCatalog(cfg.dir), { operation: 'payment_transaction.create' });
    t.is(payments.examined, events.filter((e) => e.operationKey === 'payment_transaction.create').length);
    const since = END - 86_400_000;
    const lastDay = await replay(db.knex, loadCatalog(cfg.dir), { since, until: END });
    t.is(lastDay.examined, events.filter((e) => Date.parse(e.createdAt) >= since && Date.parse(e.createdAt) < END).length);
    const limited = await replay(db.knex, loadCatalog(cfg.dir), { limit: 100, pageSize: 30 });
    t.is(limited.examined, 100);
    t.is(limited.lastSeq, events[99]!.seq);

    // The command: same report as JSON.
    const cli = await runCli(['replay', cfg.dir, '--format', 'json'], { DATABASE_URL: url });
    t.is(cli.code, 0, cli.stderr);
    t.deepEqual(JSON.parse(cli.stdout), JSON.parse(JSON.stringify(changed)));
    const text = await runCli(['replay', cfg.dir, '--operation', 'invoice.export'], { DATABASE_URL: url });
    t.regex(text.stdout, new RegExp(`\\n {2}allow → allow_redacted: ${expected.get('allow→allow_redacted')} {3}e\\.g\\. demo-\\d{6}`));
    results.set(store, { unchanged, changed });
  });
}

test.serial('SQLite and PostgreSQL replay the same seeded history to the same report', (t) => {
  const sqlite = results.get('sqlite');
  const postgres = results.get('postgres');
  if (!sqlite || !postgres) return t.fail('a store test above failed');
  const strip = (r: ReplayReport) => ({ ...r, firstSeq: undefined, lastSeq: undefined });
  t.deepEqual(strip(postgres.changed), strip(sqlite.changed));
  t.deepEqual(strip(postgres.unchanged), strip(sqlite.unchanged));
});
