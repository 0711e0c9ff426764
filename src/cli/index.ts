import { pino } from 'pino';
import { logRuleFailuresTo } from '../policy/failures.js';
import { ConfigError } from '../policy/problems.js';
import { err, out, parseFor, UsageError, type Command } from './command.js';
import keys from './commands/keys.js';
import policy from './commands/policy.js';
import fixtureTests from './commands/test.js';
import explain from './commands/explain.js';
import seed from './commands/seed.js';
import replay from './commands/replay.js';
import toFixture from './commands/to-fixture.js';
import events from './commands/events.js';

// Each file under commands/ exports its commands; adding a command is adding a file and a line here.
const commands: Command[] = [...keys, ...policy, ...fixtureTests, ...explain, ...seed, ...replay, ...toFixture, ...events];

function help(): void {
  out('usage: tps <command> [options]\n');
  for (const c of commands) out(`  tps ${c.usage.padEnd(58)} ${c.summary}`);
  out('\nConfiguration comes from the environment (DATABASE_URL, TPS_CONFIG_DIR, …); see README.');
}

export async function main(argv: string[]): Promise<number> {
  // A policy rule that throws is logged (policy/failures.ts); here stdout is the command's answer.
  logRuleFailuresTo(pino({ base: { service: 'tps' } }, pino.destination(2)));
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    help();
    return argv.length === 0 ? 2 : 0;
  }
  // The longest run of leading words that names a command wins ('events tail' before 'events').
  const command = commands
    .filter((c) => c.words.every((w, i) => argv[i] === w))
    .sort((a, b) => b.words.length - a.words.length)[0];
  if (!command) {
    err(`tps: unknown command "${argv.slice(0, 2).join(' ')}"; run "tps help"`);
    return 2;
  }
  try {
    return await command.run(parseFor(command, argv.slice(command.words.length)) as never);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`tps: ${e.message}`);
      return 2;
    }
    if (e instanceof ConfigError) {
      err(e.message);
      return 1;
    }
    err(`tps: ${(e as Error).message}`);
    return 1;
  }
}
