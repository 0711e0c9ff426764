// Rewrites README.md's reason-code table from src/reasons/catalog.ts (npm run docs:reasons).
import fs from 'node:fs';
import { REASONS } from '../src/reasons/catalog.js';

export function reasonTable(): string {
  const rows = Object.entries(REASONS).map(([code, info]) => `| \`${code}\` | ${info.stage} | ${info.description} |`);
  return ['| code | stage | meaning |', '|---|---|---|', ...rows].join('\n');
}

export function withReasonTable(readme: string): string {
  return readme.replace(/<!-- reasons -->[\s\S]*?<!-- \/reasons -->/, `<!-- reasons -->\n${reasonTable()}\n<!-- /reasons -->`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  fs.writeFileSync('README.md', withReasonTable(fs.readFileSync('README.md', 'utf8')));
}
