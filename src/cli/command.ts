import { parseArgs, type ParseArgsConfig } from 'node:util';

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

export const out = (line = ''): void => void process.stdout.write(`${line}\n`);
export const err = (line = ''): void => void process.stderr.write(`${line}\n`);
