import fs from 'node:fs';
import path from 'node:path';
import { junitReport, textReport } from '../../fixtures/report.js';
import { runFixtures } from '../../fixtures/suite.js';
import { err, out, type Command } from '../command.js';
import { configDirOf } from './policy.js';

/** Writes the file, making its folder (`--junit reports/fixtures.xml` in a fresh checkout); false, said on stderr, when it cannot. */
function writeReport(file: string, text: string): boolean {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    return true;
  } catch (e) {
    err(`tps: cannot write the JUnit report ${file}: ${(e as Error).message}`);
    return false;
  }
}

const test: Command = {
  words: ['test'],
  usage: 'test [DIR] [--junit FILE] [--match TEXT]',
  positionals: ['DIR'],
  summary: 'run every rules/*.fixtures.yaml case offline; readable report, JUnit XML for CI',
  options: { junit: { type: 'string' }, match: { type: 'string' } },
  async run({ values, positionals }) {
    const match = values.match as string | undefined;
    const run = await runFixtures(configDirOf(positionals[0]), match ? (file, name) => `${file} ${name}`.includes(match) : undefined);
    out(textReport(run));
    if (values.junit && !writeReport(values.junit as string, junitReport(run))) return 1;
    // A CI step that ran no case proved nothing: a misspelt --match or a directory without fixtures fails.
    if (run.results.length === 0 && run.problems.length === 0) {
      err(match ? `no fixture case matches --match "${match}"` : 'no fixture case found (rules/*.fixtures.yaml)');
      return 1;
    }
    return run.problems.length || run.results.some((r) => !r.ok) ? 1 : 0;
  },
};

export default [test];
