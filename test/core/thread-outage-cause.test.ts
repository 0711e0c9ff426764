import test from 'ava';
import { Redis } from 'ioredis';
import { capturedLogs, post, REDIS_TEST_URL, startTps, unique } from '../helpers/tps.js';
import { samples } from './evaluate-suite.js';

// A 503 state_unavailable is logged with what Redis said (middleware.ts, OUTAGES), wherever the
// evaluation ran: an ApiError from the evaluation thread crosses to the HTTP thread with its cause.
// Redis refuses for real: the velocity counter's key holds a string INCR cannot count.

for (const thread of [true, false]) {
  test(`[${thread ? 'evaluation thread' : 'HTTP thread'}] a Redis outage's 503 is logged with Redis's own error, and nothing of the request`, async (t) => {
    const { logger, lines } = capturedLogs('error');
    const redisPrefix = `tps-test:${unique()}:`;
    const tps = await startTps({ redis: true, redisPrefix, logger, env: { TPS_EVALUATE_THREAD: String(thread) } });
    t.teardown(() => tps.close());
    t.is(Boolean(tps.tps.evaluationThread), thread);
    const redis = new Redis(REDIS_TEST_URL);
    t.teardown(() => redis.disconnect());

    const actor = `fin_${unique()}`;
    // The count of the evaluation's own minute and the next (the test may straddle one).
    const bucket = Math.floor(Date.now() / 60_000);
    for (const b of [bucket, bucket + 1]) await redis.set(`${redisPrefix}v:test\u0000${actor}\u0000payment_transaction.create:${b}`, 'not a number');
    const res = await post(`${tps.url}/api/evaluate`, samples.payment(0, actor), tps.secretKey);
    t.is(res.status, 503);
    t.is(res.body.error.code, 'state_unavailable');

    const logged = lines.map((l) => JSON.parse(l) as { msg: string; requestId?: string; err?: { name: string; message: string } }).filter((l) => l.msg === 'shared state (Redis) did not answer');
    t.is(logged.length, 1, lines.join(''));
    t.is(logged[0]!.requestId, res.headers.get('x-request-id')!);
    t.like(logged[0]!.err, { name: 'ReplyError', message: 'ERR value is not an integer or out of range' });
    // The command's arguments (the key names the actor) stay out of the log.
    t.false(lines.join('').includes(actor), lines.join(''));
  });
}
