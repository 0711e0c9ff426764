import fs from 'node:fs';
import { junitReport, textReport } from '../../fixtures/report.js';
import { runFixtures } from '../../fixtures/suite.js';
import { out, type Command } from '../command.js';
import { configDirOf } from './policy.js';

const test: Command = {
  words: ['test'],
  usage: 'test [DIR] [--junit FILE] [--match TEXT]',
  summary: 'run every rules/*.fixtures.yaml case offline; readable report, JUnit XML for CI',
  options: { junit: { type: 'string' }, match: { type: 'string' } },
  async run({ values, positionals }) {
    const match = values.match as string | undefined;
    const run = await runFixtures(configDirOf(positionals[0]), match ? (file, name) => `${file} ${name}`.includes(match) : undefined);
    out(textReport(run));
    if (values.junit) fs.writeFileSync(values.junit as string, junitReport(run));
    return run.problems.length || run.results.some((r) => !r.ok) ? 1 : 0;
  },
};

export default [test];
