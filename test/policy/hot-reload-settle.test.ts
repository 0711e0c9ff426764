import fs from 'node:fs';
import test from 'ava';
import { loadCatalog } from '../../src/policy/catalog.js';
import { tempConfig } from '../helpers/config.js';
import { financePayment } from '../helpers/payments.js';
import { readyzUntil } from '../helpers/readyz.js';
import { capturedLogs, get, post, startTps } from '../helpers/tps.js';

// A writer that pauses mid-file (a slow copy, an editor's save over a network share) leaves a
// prefix on disk that may well be valid YAML and a valid policy: `value: 1` of `value: 1000`.
// A watched reload compiles the files only once they have stayed as read for TPS_WATCH_SETTLE_MS.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('a file written in pieces, pausing past the debounce, is swapped in only once whole: no prefix of it is ever served', async (t) => {
  const cfg = tempConfig({ fixtures: false });
  const scratch = tempConfig({ fixtures: false });
  const { logger, lines } = capturedLogs('info');
  // The writer pauses 150 ms between pieces: past the debounce (20 ms), well within the settle time.
  const tps = await startTps({ configDir: cfg.dir, logger, env: { TPS_WATCH_DEBOUNCE_MS: '20', TPS_WATCH_SETTLE_MS: '1500' } });
  t.teardown(async () => {
    await tps.close();
    cfg.cleanup();
    scratch.cleanup();
  });

  // The rule's threshold moved to the file's end, so that each prefix cut inside it is a whole policy.
  const original = cfg.read('rules/payments.yaml');
  const tail = 'rules:\n  - name: step-up-large-payment\n';
  t.true(original.endsWith('ai:\n  enabled: true\n') && original.includes(tail));
  const whole =
    original.slice(0, original.indexOf(tail)) +
    'ai:\n  enabled: true\n' +
    tail +
    '    then:\n      decision: step_up_required\n      reason: large_payment_amount\n      challenge: proof_token\n' +
    '    when:\n      all:\n        - fact: requestData.amount\n          operator: greaterThanInclusive\n          value: 1000\n';
  const pieces = [whole.slice(0, -'000\n'.length), '0', '0', '0\n'];
  // Every prefix the writer leaves compiles (loadCatalog throws otherwise), each to a version of its own.
  const versionAfter = (n: number) => {
    scratch.write('rules/payments.yaml', pieces.slice(0, n).join(''));
    return loadCatalog(scratch.dir).versionId;
  };
  const prefixes = [1, 2, 3].map(versionAfter);
  const final = versionAfter(4);
  const before = (await get(`${tps.url}/readyz`)).body.configuration.versionId;
  t.is(new Set([before, final, ...prefixes]).size, 5);

  const seen = new Set<string>();
  let writing = true;
  const watching = (async () => {
    while (writing) {
      seen.add((await get(`${tps.url}/readyz`)).body.configuration.versionId);
      await sleep(10);
    }
  })();
  const fd = fs.openSync(cfg.path('rules/payments.yaml'), 'w');
  try {
    for (const [i, piece] of pieces.entries()) {
      if (i > 0) await sleep(150);
      fs.writeSync(fd, piece);
      fs.fsyncSync(fd);
    }
  } finally {
    fs.closeSync(fd);
  }
  const served = await readyzUntil(tps.url, (b) => b.configuration.versionId === final);
  writing = false;
  await watching;
  t.deepEqual(served.configuration.lastReload, { status: 'ok' });

  // Neither /readyz nor the log ever saw a prefix's version in force.
  t.deepEqual([...seen].filter((v) => v !== before && v !== final), []);
  const swapped = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'configuration reloaded');
  t.deepEqual(swapped.map((l) => l.versionId), [final]);
  // And the whole file decides: 500 is below its threshold (not below 1, 10 or 100).
  t.is((await post(`${tps.url}/api/evaluate`, financePayment(500), tps.secretKey)).body.decision, 'allow');
  t.is((await post(`${tps.url}/api/evaluate`, financePayment(1000), tps.secretKey)).body.decision, 'step_up_required');
});
