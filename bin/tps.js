#!/usr/bin/env node
// The `tps` command: runs the compiled CLI (npm run build), or the TypeScript source through tsx
// in a checkout that has not been built yet.
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const compiled = fileURLToPath(new URL('../dist/src/cli/index.js', import.meta.url));
let entry;
if (existsSync(compiled)) {
  entry = pathToFileURL(compiled).href;
} else {
  await import('tsx/esm');
  entry = new URL('../src/cli/index.ts', import.meta.url).href;
}
const { main } = await import(entry);
process.exitCode = await main(process.argv.slice(2));
