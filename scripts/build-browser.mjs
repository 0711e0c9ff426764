#!/usr/bin/env node
// Builds the browser continuity client into one minified ESM file and reports its size,
// minified and gzipped (the README figure; the goal is at most 3 KiB).
// Usage: node scripts/build-browser.mjs [outfile]   (default dist/browser/tps-browser.js)

import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const outfile = process.argv[2] ?? 'dist/browser/tps-browser.js';

await build({
  entryPoints: ['src/browser/index.ts'],
  outfile,
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  platform: 'browser',
  legalComments: 'none',
  logLevel: 'warning',
});

const code = readFileSync(outfile);
const gzipped = gzipSync(code, { level: 9 }).length;
console.log(`${outfile}: ${code.length} B minified, ${gzipped} B gzipped (${(gzipped / 1024).toFixed(2)} KiB)`);
if (gzipped > 3 * 1024) {
  console.error('browser bundle is over the 3 KiB gzipped budget');
  process.exitCode = 1;
}
