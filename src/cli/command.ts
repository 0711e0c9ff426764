import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SECRET_PREFIX } from '../auth/keys.js';
import { ENVIRONMENT_NAME_RULE, isEnvironmentName } from '../config/environmentName.js';

/** One `tps` subcommand. Its words (e.g. ['keys', 'create']) select it; options are parsed for it. */
export interface Command {
  words: string[];
  usage: string;
  summary: string;
  options?: ParseArgsConfig['options'];
  /** The positional arguments it takes, by name (e.g. ['DIR']); any more is a usage error. */
  positionals?: string[];
  /** How its options are written, said when one is repeated or a stray word is refused. */
  optionsHint?: string;
  run(args: { values: Record<string, string | boolean | string[] | boolean[] | undefined>; positionals: string[] }): Promise<number>;
}

/** A problem the user caused (bad flag, missing argument): printed without a stack, exit 2. */
export class UsageError extends Error {}

const usageError = (command: Command, message: string) => new UsageError(`${message}\nusage: tps ${command.usage}`);

/**
 * The command's options and positionals. parseArgs alone keeps the last of a repeated option and
 * any stray word: `--decision deny --decision allow` would quietly be allow only, and
 * `decision=deny` ignored would widen what is done; both are refused instead, as the API refuses a
 * repeated or unknown query parameter.
 */
export function parseFor(command: Command, argv: string[]) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: command.options ?? {}, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw usageError(command, (err as Error).message);
  }
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== 'option') continue;
    const option = command.options?.[token.name];
    // A repeated --json says the same twice; a repeated value option says two different things.
    if (option?.type !== 'string' || option.multiple) continue;
    if (seen.has(token.name)) throw usageError(command, `--${token.name} is given more than once (${hintOf(command)})`);
    seen.add(token.name);
  }
  // A secret key given without its --key is not echoed (terminal scrollback, CI logs).
  const stray = parsed.positionals[command.positionals?.length ?? 0]?.replaceAll(new RegExp(`${SECRET_PREFIX}\\S*`, 'g'), `${SECRET_PREFIX}…`);
  if (stray !== undefined) throw usageError(command, `unexpected argument "${stray}"${strayHint(command, stray)}`);
  return { values: parsed.values, positionals: parsed.positionals };
}

const hintOf = (command: Command): string => command.optionsHint ?? 'options are --name value, each given once';

// `decision=deny`, written as in a query string, gets its own spelling back.
function strayHint(command: Command, word: string): string {
  const hint = hintOf(command);
  const named = /^([^=\s]+)=(.*)$/s.exec(word);
  if (named && command.options && Object.hasOwn(command.options, named[1]!)) return `; write it --${named[1]} ${named[2]} (${hint})`;
  const after = command.positionals?.length ? ` after ${command.positionals.join(' ')}` : '';
  return command.options ? `${after}; ${hint}` : `${after}; tps ${command.words.join(' ')} takes no more`;
}

/** `--env NAME`, checked as every environment's name is: a misspelt one would select nothing and exit 0. */
export function envOption(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isEnvironmentName(value)) throw new UsageError(`--env must be an environment name (${ENVIRONMENT_NAME_RULE}), got "${String(value)}"`);
  return value;
}

export const out = (line = ''): void => void process.stdout.write(`${line}\n`);
export const err = (line = ''): void => void process.stderr.write(`${line}\n`);
