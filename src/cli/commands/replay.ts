import { replay } from '../../replay/replay.js';
import { formatReplay } from '../../replay/report.js';
import { parseInstant } from '../../validate/timestamp.js';
import { openEventsToRead } from '../readStore.js';
import { envOption, err, out, UsageError, type Command } from '../command.js';
import { configDirOf, loadWorkingTree } from './policy.js';

// parseInstant, not Date.parse: that reads a time without an offset in this machine's zone (the
// window would move with TZ) and rolls 2025-02-30 over to March.
function time(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseInstant(String(value), { allowDate: true });
  if (ms === undefined) throw new UsageError(`${flag} must be an ISO 8601 date (UTC midnight) or date-time with an offset, e.g. 2025-01-31 or 2025-01-31T12:00:00Z`);
  return ms;
}

const replayCommand: Command = {
  words: ['replay'],
  usage: 'replay [DIR] [--since T] [--until T] [--operation KEY] [--env NAME] [--limit N] [--format text|json]',
  summary: "re-decide stored events with the working tree's policies; show what would change",
  options: {
    since: { type: 'string' },
    until: { type: 'string' },
    operation: { type: 'string' },
    env: { type: 'string' },
    limit: { type: 'string' },
    format: { type: 'string' },
    samples: { type: 'string' },
  },
  async run({ values, positionals }) {
    const format = (values.format as string | undefined) ?? 'text';
    if (format !== 'text' && format !== 'json') throw new UsageError('--format is text or json');
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new UsageError('--limit N must be a positive integer');
    const samples = values.samples === undefined ? undefined : Number(values.samples);
    if (samples !== undefined && (!Number.isInteger(samples) || samples < 0)) throw new UsageError('--samples N must be an integer >= 0');
    const options = {
      since: time(values.since, '--since'),
      until: time(values.until, '--until'),
      operation: values.operation as string | undefined,
      environment: envOption(values.env),
      limit,
      samples,
    };
    const catalog = loadWorkingTree(configDirOf(positionals[0]));
    const db = await openEventsToRead();
    try {
      const report = await replay(
        db.knex,
        catalog,
        options,
        format === 'text' && process.stderr.isTTY ? (n) => err(`\r… ${n} events`) : undefined,
      );
      out(format === 'json' ? JSON.stringify(report, null, 2) : formatReplay(report));
    } finally {
      await db.close();
    }
    return 0;
  },
};

export default [replayCommand];
