import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import { loadCatalog } from '../../src/policy/catalog.js';
import { ConfigError } from '../../src/policy/problems.js';
import { REASONS } from '../../src/reasons/catalog.js';
import { REPO_ROOT } from '../helpers/tps.js';

function copyConfig(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-config-'));
  fs.cpSync(path.join(REPO_ROOT, 'operations'), path.join(dir, 'operations'), { recursive: true });
  fs.cpSync(path.join(REPO_ROOT, 'rules'), path.join(dir, 'rules'), { recursive: true });
  return dir;
}

test('the sample configuration compiles: five operations, one engine per policy', (t) => {
  const c = loadCatalog(REPO_ROOT);
  t.deepEqual([...c.operations.keys()].sort(), ['bank_account.update', 'customer.create', 'customer.read_pii', 'invoice.export', 'payment_transaction.create']);
  for (const p of c.policies.values()) t.regex(p.versionId, /^pv_/);
});

test('every reason code the configuration can emit is in the catalogue, and SPEC codes exist', (t) => {
  const c = loadCatalog(REPO_ROOT);
  const emitted = new Set<string>();
  for (const p of c.policies.values()) {
    for (const s of p.signals) emitted.add(s.reason);
    for (const r of p.rules) emitted.add(r.reason);
  }
  for (const code of emitted) t.true(code in REASONS, code);
  for (const code of ['low_risk_operation', 'missing_recent_human_signal', 'policy_recent_human_signal_required', 'challenge_satisfied', 'bulk_or_export_volume', 'policy_redaction_applied', 'weak_session_continuity', 'high_sensitivity_operation', 'privileged_write']) {
    t.true(code in REASONS, code);
  }
});

test('a bad configuration stops loading and names each file, path and reason', (t) => {
  const dir = copyConfig();
  try {
    fs.writeFileSync(path.join(dir, 'operations', 'customer.create.yaml'), 'key: customer.create\ndisplayName: Create\nactionType: create\nresourceType: customer\nsensitivity: extreme\npolicy: standard\npolcy: typo\n');
    fs.writeFileSync(path.join(dir, 'operations', 'orphan.yaml'), 'key: orphan.create\ndisplayName: Orphan\nactionType: create\nresourceType: orphan\nsensitivity: low\npolicy: nowhere\n');
    fs.appendFileSync(path.join(dir, 'rules', 'standard.yaml'), 'requireRoles: []\n');
    fs.writeFileSync(path.join(dir, 'rules', 'broken.yaml'), 'id: broken\nthresholds: { medium: 10, high: 140 }\nrules:\n  - name: r\n    then: { decision: allow_redacted, reason: x_y }\n');
    const err = t.throws(() => loadCatalog(dir), { instanceOf: ConfigError }) as ConfigError;
    // Exact wording is covered by the `tps validate` tests; here: every file and path is named.
    const found = err.problems.map((p) => `${path.basename(p.file)} ${p.path}`).sort();
    t.deepEqual(found, [
      'broken.yaml rules[0].then.redaction',
      'broken.yaml thresholds.high',
      'customer.create.yaml polcy',
      'customer.create.yaml sensitivity',
      'orphan.yaml policy',
      'standard.yaml requireRoles',
    ]);
    t.true(err.problems.every((p) => p.message.length > 0));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a YAML syntax error is reported with its line', (t) => {
  const dir = copyConfig();
  try {
    fs.writeFileSync(path.join(dir, 'rules', 'standard.yaml'), 'id: standard\nthresholds: { medium: 30\n');
    const err = t.throws(() => loadCatalog(dir), { instanceOf: ConfigError }) as ConfigError;
    const syntax = err.problems.find((p) => path.basename(p.file) === 'standard.yaml');
    t.truthy(syntax?.line);
    // The operations bound to it are then reported too: nothing is half-loaded.
    t.true(err.problems.some((p) => p.message === 'policy "standard" is not defined under rules/'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
