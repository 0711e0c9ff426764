import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCatalog } from '../src/policy/catalog.js';
import { generateDemoHistory } from '../src/seed/demo.js';
import type { EventRecord } from '../src/store/eventStore.js';

/**
 * `tsx scripts/train-explanation-dictionary.ts OUT.ts [COUNT]`: trains a zstd dictionary on the
 * explanations of the demo history (src/seed/demo.ts, seed 5: every operation and decision of the
 * sample configuration) with the `zstd` CLI (Debian package zstd), and writes it as a TypeScript
 * module. A dictionary is frozen once rows use it, so this is for making the next version, not
 * for changing one in use (src/store/explanationCodec.ts).
 */
const [out, countArg] = process.argv.slice(2);
if (!out) throw new Error('usage: tsx scripts/train-explanation-dictionary.ts OUT.ts [COUNT]');
const count = Number(countArg ?? 6000);
const MAX_BYTES = 16_384;

const ROOT = path.resolve(import.meta.dirname, '..');
const events: EventRecord[] = [];
await generateDemoHistory({ catalog: loadCatalog(ROOT), environment: 'production', count, endMs: Date.UTC(2026, 0, 1), write: async (batch) => void events.push(...batch) });

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-dict-'));
try {
  // Challenge ids are random; a fixed one of the same shape keeps the dictionary reproducible.
  const sample = (e: EventRecord) => JSON.stringify(e.explanation).replace(/"ch_[A-Za-z0-9_-]{22}"/g, `"ch_${'A'.repeat(22)}"`);
  events.forEach((e, i) => fs.writeFileSync(path.join(dir, `${i}.json`), sample(e)));
  const dict = path.join(dir, 'dictionary');
  execFileSync('zstd', ['--train', '-q', '--dictID=2', `--maxdict=${MAX_BYTES}`, '-o', dict, ...events.map((_, i) => path.join(dir, `${i}.json`))]);
  const base64 = fs.readFileSync(dict).toString('base64');
  const lines = base64.match(/.{1,100}/g)!.map((l) => `  '${l}',`);
  fs.writeFileSync(
    out,
    [
      `// Frozen zstd dictionary for stored explanations; see explanationCodec.ts. Trained by`,
      `// scripts/train-explanation-dictionary.ts on ${count} demo explanations. NEVER edit it: rows`,
      `// written with it can only be read with it. A better dictionary is a new version beside this one.`,
      `export const EXPLANATION_DICTIONARY_BASE64 = [`,
      ...lines,
      `].join('');`,
      '',
    ].join('\n'),
  );
  console.log(`${out}: ${fs.statSync(dict).size} bytes from ${events.length} explanations`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
