import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ENVIRONMENT_NAME_RULE, isEnvironmentName } from '../config/environmentName.js';

/** One `tps` subcommand. Its words (e.g. ['keys', 'create']) select it; options are parsed for it. */
export interface Command {
  words: string[];
  usage: string;
  summary: string;
  options?: ParseArgsConfig['options'];
  run(args: { values: Record<string, string | boolean | string[] | boolean[] | undefined>; positionals: string[] }): Promise<number>;
}

/** A problem the user caused (bad flag, missing argument): printed without a stack, exit 2. */
export class UsageError extends Error {}

export function parseFor(command: Command, argv: string[]) {
  try {
    return parseArgs({ args: argv, options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nusage: tps ${command.usage}`);
  }
}

/** `--env NAME`, checked as every environment's name is: a misspelt one would select nothing and exit 0. */
export function envOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isEnvironmentName(value)) throw new UsageError(`--env must be an environment name (${ENVIRONMENT_NAME_RULE}), got "${String(value)}"`);
  return value;
}

export const out = (line = ''): void => void process.stdout.write(`${line}\n`);
export const err = (line = ''): void => void process.stderr.write(`${line}\n`);
