import test from 'ava';
import { runScript } from '../helpers/script.js';

/**
 * What the evaluate path leaves V8 to promote dead out of the young generation: each MB of it is
 * copied by the scavenges and then collected by major GCs, whose marking set off the 50% phase's
 * slowest answers (bench/ROUNDS.md, fifty-first and fifty-second rounds).
 */
async function promotedMb(kind: 'map' | 'table' | 'evaluations'): Promise<number> {
  const run = await runScript('test/helpers/promotion.ts', { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc` }, [kind]);
  if (run.code !== 0) throw new Error(`promotion.ts ${kind} exited with ${run.code}: ${run.stderr}`);
  return (JSON.parse(run.stdout) as { promotedMb: number }).promotedMb;
}

test('requests that came and went are not promoted through the waiting table (unlike a Map)', async (t) => {
  const [mapMb, tableMb] = await Promise.all([promotedMb('map'), promotedMb('table')]);
  // The control: if V8 stops linking a Map's old tables, this says the table's reason is gone.
  t.true(mapMb > 5, `a Map promoted ${mapMb.toFixed(2)} MB`);
  t.true(tableMb < 1, `the table promoted ${tableMb.toFixed(2)} MB`);
});

test('10,000 evaluations promote under 3 MB (a spread copy of the facts for the policy took it to ~6.6)', async (t) => {
  const mb = await promotedMb('evaluations');
  t.true(mb < 3, `10,000 evaluations promoted ${mb.toFixed(2)} MB`);
});
