import fs from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { readSettings } from '../../src/config/env.js';
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
