import test from 'ava';
import { runScript } from '../helpers/script.js';

// `npx tsx bench/stages.ts` in a short form: every stage of the evaluate path is timed warm and
// cold, and the last line carries the same figures as JSON. Which stage costs more is the
// machine's to say; what is checked is that each was run both ways and reported.

const STAGES = [
  'JSON.parse(body)',
  'validateEvaluateRequest',
  'evaluator.evaluate (record is a no-op)',
  'buildFacts',
  'assessRisk',
  'runPolicy (json-rules-engine)',
  'toRow (event to columns, JSON)',
  'encodeExplanation (its JSON and zstd, within toRow)',
  'prepareEvent (toRow, then the row as the text the thread hands over)',
  'JSON.stringify(response-sized object)',
];

const stages = (env: Record<string, string>) => runScript('bench/stages.ts', env);

test('bench/stages.ts times each stage warm and cold, and prints the table and its JSON', async (t) => {
  const { code, stdout, stderr } = await stages({ STAGES_N: '400', STAGES_EVICT_MB: '1' });
  t.is(code, 0, stderr);
  const lines = stdout.trimEnd().split('\n');
  const summary = JSON.parse(lines.at(-1)!) as { evictBytes: number; calls: { warm: number; cold: number }; stages: { name: string; warmUs: number; coldUs: number }[] };
  t.is(summary.evictBytes, 1024 * 1024);
  t.deepEqual(summary.calls, { warm: 400, cold: 50 });
  t.deepEqual(
    summary.stages.map((s) => s.name),
    STAGES,
  );
  for (const s of summary.stages) {
    t.true(Number.isFinite(s.warmUs) && s.warmUs > 0 && Number.isFinite(s.coldUs) && s.coldUs > 0, JSON.stringify(s));
    // The table's row says the same as the JSON.
    t.true(lines.some((line) => line.trim().split(/\s+/).slice(0, 2).join(' ') === `${s.warmUs.toFixed(2)} ${s.coldUs.toFixed(2)}` && line.endsWith(`  ${s.name}`)), s.name);
  }
  t.regex(lines[0]!, /cold \(each after touching 1 MiB\)/);
});

test('bench/stages.ts refuses an eviction size that is not a positive number', async (t) => {
  const { code, stderr } = await stages({ STAGES_N: '400', STAGES_EVICT_MB: 'lots' });
  t.not(code, 0);
  t.regex(stderr, /STAGES_EVICT_MB takes a number of MiB above 0, got "lots"/);
});
