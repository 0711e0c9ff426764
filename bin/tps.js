#!/usr/bin/env node
// The `tps` command. In a checkout (src/ and tsx present) it runs the TypeScript source, so the CLI
// always validates, compiles and replays with the code beside the YAML; an installed package
// without tsx runs the compiled dist/.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const source = fileURLToPath(new URL('../src/cli/index.ts', import.meta.url));
const compiled = fileURLToPath(new URL('../dist/src/cli/index.js', import.meta.url));

function hasTsx() {
  try {
    createRequire(import.meta.url).resolve('tsx/esm');
    return true;
  } catch {
    return false;
  }
}

let entry;
if (existsSync(source) && hasTsx()) {
  await import('tsx/esm');
  entry = pathToFileURL(source).href;
} else {
  entry = pathToFileURL(compiled).href;
}
const { main } = await import(entry);
// Exit explicitly: a pool or watcher left open by a failed command must not keep the shell waiting.
process.exit(await main(process.argv.slice(2)));
