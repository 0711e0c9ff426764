import type { Knex } from 'knex';
import { readSettings } from '../../config/env.js';
import { didYouMean } from '../../lib/suggest.js';
import { lookupOperation, type Catalog } from '../../policy/catalog.js';
import { replay } from '../../replay/replay.js';
import { formatReplay } from '../../replay/report.js';
import { boundMs, laterBound } from '../../validate/timestamp.js';
import { openEventsToRead } from '../readStore.js';
import { envOption, err, out, UsageError, type Command } from '../command.js';
import { configDirOf, loadWorkingTree } from './policy.js';

// boundMs (parseInstant), not Date.parse: that reads a time without an offset in this machine's zone
// (the window would move with TZ) and rolls 2025-02-30 over to March. A part of a millisecond rounds
// up, as the API's from/to do: events are stored in whole milliseconds.
function time(value: unknown, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = boundMs(String(value));
  if (ms === undefined) throw new UsageError(`${flag} must be an ISO 8601 date (UTC midnight) or date-time with an offset, e.g. 2025-01-31 or 2025-01-31T12:00:00Z`);
  return ms;
}

/**
 * Exit status of --fail-on-change when a decision or another part of an answer changes. An event
 * the working tree answers with no decision (unknown_operation, not_redecided) is a changed
 * decision: dropping an operation must not pass the gate while every live request gets a 422.
 */
const EXIT_CHANGED = 3;

/**
 * The distinct values of a column of the stored events, in one environment if given, in order (the
 * small facet table, not a scan of the events: openEventsToRead refuses a store without it).
 */
async function storedDistinct(knex: Knex, column: 'environment' | 'operation_key', environment?: string): Promise<string[]> {
  const q = knex('event_facets').distinct(column).orderBy(column);
  if (environment) q.where('environment', environment);
  return (await q).map((r: Record<string, string>) => r[column]);
}

/**
 * A misspelt --operation would select nothing and report "0 of 0" as a success; so would one that
 * exists only in another environment than --env's.
 */
async function checkOperation(knex: Knex, catalog: Catalog, operation: string | undefined, environment: string | undefined): Promise<void> {
  if (operation === undefined) return;
  const configured = environment ? [...catalog.operations.keys()].filter((k) => lookupOperation(catalog, environment, k)) : [...catalog.operations.keys()];
  if (configured.includes(operation)) return;
  const stored = await storedDistinct(knex, 'operation_key', environment);
  if (stored.includes(operation)) return;
  const where = environment ? ` in environment "${environment}"` : '';
  throw new UsageError(`--operation "${operation}" is neither configured in the working tree nor found among the stored events${where}${didYouMean(operation, [...configured, ...stored])}`);
}

// Names listed in the usage error, at most: a store may hold many environments.
const LISTED = 20;

/**
 * --env, else TPS_ENVIRONMENT (as `tps events export` and `tps seed` default), else the store's one
 * environment. With several and none named, a replay would mix them (each re-decided with its own
 * environment's operations, counted together): the user picks one.
 */
async function chooseEnvironment(knex: Knex, flag: string | undefined, variable: string | undefined): Promise<{ environment: string | undefined; from: string }> {
  const chosen = flag !== undefined ? { environment: flag, from: '--env' } : variable !== undefined ? { environment: variable, from: 'TPS_ENVIRONMENT' } : undefined;
  const stored = await storedDistinct(knex, 'environment');
  const named = stored.slice(0, LISTED).map((e) => `"${e}"`).join(', ') + (stored.length > LISTED ? `, and ${stored.length - LISTED} more` : '');
  if (chosen) {
    // An environment with no stored events would replay "0 of 0" and pass --fail-on-change.
    if (stored.length > 0 && !stored.includes(chosen.environment)) {
      throw new UsageError(`environment "${chosen.environment}" (${chosen.from}) has no stored events; the store holds events of ${stored.length === 1 ? 'environment' : `${stored.length} environments`} ${named}${didYouMean(chosen.environment, stored)}`);
    }
    return chosen;
  }
  if (stored.length <= 1) return { environment: stored[0], from: 'the only one stored' };
  throw new UsageError(`the store holds events of ${stored.length} environments (${named}): name one with --env NAME (or set TPS_ENVIRONMENT)`);
}

const replayCommand: Command = {
  words: ['replay'],
  usage: 'replay [DIR] [--since T] [--until T] [--operation KEY] [--env NAME] [--limit N] [--format text|json] [--fail-on-change]',
  positionals: ['DIR'],
  summary: `re-decide stored events with the working tree's policies; show what would change (--fail-on-change: exit ${EXIT_CHANGED} if any)`,
  options: {
    since: { type: 'string' },
    until: { type: 'string' },
    operation: { type: 'string' },
    env: { type: 'string' },
    limit: { type: 'string' },
    format: { type: 'string' },
    samples: { type: 'string' },
    'fail-on-change': { type: 'boolean' },
  },
  async run({ values, positionals }) {
    const format = (values.format as string | undefined) ?? 'text';
    if (format !== 'text' && format !== 'json') throw new UsageError('--format is text or json');
    const limit = values.limit === undefined ? undefined : Number(values.limit);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new UsageError('--limit N must be a positive integer');
    const samples = values.samples === undefined ? undefined : Number(values.samples);
    if (samples !== undefined && (!Number.isInteger(samples) || samples < 0)) throw new UsageError('--samples N must be an integer >= 0');
    const settings = readSettings();
    const flagEnv = envOption(values.env);
    const options = {
      since: time(values.since, '--since'),
      until: time(values.until, '--until'),
      operation: values.operation as string | undefined,
      environment: flagEnv,
      limit,
      samples,
      challengeTtlMs: settings.challengeTtlSeconds * 1000,
    };
    if (options.since !== undefined && options.until !== undefined && !laterBound(String(values.until), String(values.since))) throw new UsageError('--until must be after --since (the window is since inclusive, until exclusive)');
    const catalog = loadWorkingTree(configDirOf(positionals[0]));
    const db = await openEventsToRead();
    try {
      // settings.environment is 'development' when TPS_ENVIRONMENT is unset: only a set one is a choice.
      const chosen = await chooseEnvironment(db.knex, flagEnv, process.env.TPS_ENVIRONMENT ? settings.environment : undefined);
      options.environment = chosen.environment;
      if (flagEnv === undefined && chosen.environment !== undefined) err(`replaying environment "${chosen.environment}" (${chosen.from})`);
      await checkOperation(db.knex, catalog, options.operation, options.environment);
      const report = await replay(
        db.knex,
        catalog,
        options,
        format === 'text' && process.stderr.isTTY ? (n) => err(`\r… ${n} events`) : undefined,
      );
      out(format === 'json' ? JSON.stringify(report, null, 2) : formatReplay(report));
      return values['fail-on-change'] && report.changed + report.outcomeChanged > 0 ? EXIT_CHANGED : 0;
    } finally {
      await db.close();
    }
  },
};

export default [replayCommand];
