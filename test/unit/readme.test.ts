import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { readSettings } from '../../src/config/env.js';
import { KNOWN_FACT_PATHS, OPEN_FACT_ROOTS } from '../../src/facts/paths.js';
import { withReasonTable } from '../../scripts/readme-reasons.js';
import { REPO_ROOT } from '../helpers/tps.js';

const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

test('the README reason table is the catalogue (run npm run docs:reasons after changing it)', (t) => {
  t.is(readme, withReasonTable(readme));
});

test('the README names every environment variable the service reads', (t) => {
  const source = fs.readFileSync(path.join(REPO_ROOT, 'src/config/env.ts'), 'utf8');
  const names = [...source.matchAll(/'((?:TPS|PORT|HOST|DATABASE|REDIS|LOG)[A-Z_]*)'/g)].map((m) => m[1]!);
  t.true(names.length > 10);
  for (const name of new Set(names)) t.true(readme.includes(`\`${name}\``), name);
  t.is(typeof readSettings({}).port, 'number');
});

/** The fact paths README's Facts table names: `root.leaf`, `.leaf` (under the root before it) or `root.*`. */
function readmeFacts(): string[] {
  const section = readme.slice(readme.indexOf('### Facts'), readme.indexOf('## Reason codes'));
  const paths: string[] = [];
  for (const row of section.split('\n').filter((line) => line.startsWith('| `'))) {
    const names = row.split('|')[1]!;
    let root = '';
    for (const [, name] of names.matchAll(/`([^`]+)`/g)) {
      if (!name!.startsWith('.')) root = name!.slice(0, name!.indexOf('.'));
      paths.push(name!.startsWith('.') ? `${root}${name}` : name!);
    }
  }
  return paths;
}

test('the README Facts table lists exactly the fact paths validation accepts (src/facts/paths.ts)', (t) => {
  t.deepEqual(readmeFacts().sort(), [...KNOWN_FACT_PATHS, ...OPEN_FACT_ROOTS.map((root) => `${root}.*`)].sort());
});
