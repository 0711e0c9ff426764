import test from 'ava';
import { Redis } from 'ioredis';
import type { StoredChallenge } from '../../src/state/challenges.js';
import { stateOf, storedChallenge } from '../helpers/state.js';
import { REDIS_TEST_URL, unique } from '../helpers/tps.js';

// Redis Cluster and proxies route a script by the keys it is given (KEYS), so every key a script
// touches must be one of them. WITHDRAW read its put-back challenge by a name it made itself. A real
// Redis's MONITOR shows each EVAL with its keys, then each command its script ran ("lua").

const ENV = 'test';
const FP = 'fingerprint-keys';

const challenge = (nowMs: number): StoredChallenge => storedChallenge(FP, nowMs);

test('[redis] every key a Lua script touches is one it was given in KEYS', async (t) => {
  const prefix = `tps-test:${unique()}:`;
  const state = stateOf('redis', t, prefix);
  const client = new Redis(REDIS_TEST_URL);
  const monitor = await client.monitor();
  t.teardown(() => {
    monitor.disconnect();
    client.disconnect();
  });
  const seen: { source: string; args: string[] }[] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => void (args.some((a) => String(a).includes(prefix)) && seen.push({ source, args: args.map(String) })));

  // Every script: the quota's take, consume, and a withdrawal that points back at a put-back challenge.
  const now = Date.now();
  const { challenges, counters } = state;
  await counters.take('quota', 60, 10, now);
  const x = challenge(now);
  await challenges.issue(x, now);
  const used = await challenges.consume(ENV, FP, undefined, now);
  const y = challenge(now);
  await challenges.issue(y, now);
  await challenges.revert({ consumed: used }, now);
  await challenges.revert({ issued: y }, now);
  t.is((await challenges.consume(ENV, FP, undefined, now))?.id, x.id, 'the withdrawal pointed back at the challenge put back');

  // Everything sent so far has been seen once a last command under the prefix is.
  const end = `${prefix}end`;
  await client.get(end);
  for (const deadline = Date.now() + 10_000; !seen.some((c) => c.args.includes(end)); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > deadline) throw new Error('MONITOR never showed the last command');
  }

  let declared: string[] | undefined;
  const scripts: string[][] = [];
  for (const { source, args } of seen) {
    if (source !== 'lua') {
      if (/^eval(sha)?$/i.test(args[0]!)) scripts.push((declared = args.slice(3, 3 + Number(args[2]))));
      continue;
    }
    t.truthy(declared, `a script command before any EVAL: ${args.join(' ')}`);
    // The commands TPS's scripts run take one key, their first argument.
    t.true(declared!.includes(args[1]!), `${args.join(' ')} touches a key its EVAL did not declare (${declared!.join(', ')})`);
  }
  // take, consume, the withdrawal (in revert's MULTI), consume.
  t.is(scripts.length, 4);
});
