import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { loadCatalog } from '../../src/policy/catalog.js';
import { runCli } from '../helpers/cli.js';
import { REPO_ROOT } from '../helpers/tps.js';

// `tps explain`: one request evaluated offline through the Evaluator, then its decision, each
// signal's contribution, the thresholds crossed and every rule with whether it fired.

/** The request in a file of its own, removed with its folder when the test ends. */
const requestFile = (t: ExecutionContext, body: unknown, ext = 'json') => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-explain-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, `request.${ext}`);
  fs.writeFileSync(file, typeof body === 'string' ? body : JSON.stringify(body));
  return file;
};

test.serial('explain prints the decision, contributions, thresholds crossed and every rule', async (t) => {
  const file = requestFile(t, 'actor: { id: u1, authenticated: false }\nresource: { type: customer, id: c1 }\nsession: { isNewDevice: true, geoChanged: true, networkChanged: true }\n', 'yaml');
  const { code, stdout, stderr } = await runCli(['explain', '--operation', 'customer.create', '--request', file]);
  t.is(code, 0, stderr);
  const standard = loadCatalog(REPO_ROOT).policies.get('standard')!.versionId;
  t.is(
    stdout,
    [
      `operation   customer.create (medium) → policy standard ${standard}`,
      'decision    step_up_required  (challenge passkey)',
      'score       75.50 (high)',
      'reasons     missing_recent_human_signal, new_device, geo_changed, network_changed, unauthenticated_actor, score_step_up_threshold',
      '',
      'signals (value × weight = contribution)',
      '  unauthenticated_actor        1.00 ×  20 =     20   reason unauthenticated_actor',
      '  missing_recent_human_signal  1.00 ×  15 =     15   reason missing_recent_human_signal',
      '  weak_session_continuity      0.50 ×  25 =  12.50',
      '  new_device                   1.00 ×  10 =     10   reason new_device',
      '  geo_changed                  1.00 ×  10 =     10   reason geo_changed',
      '  network_changed              1.00 ×   5 =      5   reason network_changed',
      '  high_sensitivity_operation   0.30 ×  10 =      3',
      '',
      'thresholds',
      '  ✓ crossed     medium   30  (band medium)',
      '  ✓ crossed     high     60  (band high)',
      '  ✓ crossed     stepUp   60  (step-up)',
      '    not crossed deny     85  (deny)',
      '',
      'rules (in policy order)',
      '    -      score-deny     deny             score_deny_threshold',
      '  ✓ fired  score-step-up  step_up_required score_step_up_threshold',
      '',
    ].join('\n'),
  );
});

test.serial('explain --json gives the response and the explanation; a bad request is a usage error', async (t) => {
  const file = requestFile(t, { actor: { id: 'fin-1', roles: ['finance'] }, resource: { type: 'invoice', id: 'b1' }, requestData: { requestedCount: 5000 } });
  const { code, stdout } = await runCli(['explain', '--operation', 'invoice.export', '--request', file, '--json']);
  t.is(code, 0);
  const { response, explanation } = JSON.parse(stdout);
  t.is(response.decision, 'allow_redacted');
  t.deepEqual(response.redaction, { fields: ['customer.email', 'customer.phone', 'customer.taxId'], strategy: 'mask' });
  t.deepEqual(
    explanation.rules.filter((r: { fired: boolean }) => r.fired).map((r: { name: string }) => r.name),
    ['redact-bulk-export'],
  );

  const bad = await runCli(['explain', '--operation', 'invoice.export', '--request', requestFile(t, { actor: { id: 'a' }, resource: { type: 'x', id: 'y' }, session: { continuityStrength: 2 } })]);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /session\.continuityStrength: session\.continuityStrength must be at most 1/);
});
