import test from 'ava';
import { SWEEP_EVERY_HITS } from '../../src/state/counters.js';
import { stateOf } from '../helpers/state.js';

// The velocity count as each state keeps it: in the process, and in a real Redis under a prefix of
// the test's own. Policies' windows differ (serviceWindow.seconds), and one key's window must not
// decide another's: the in-process counter sweeps idle keys every SWEEP_EVERY_HITS hits, whichever
// key makes the last of them.
const HOUR = 3600;
const MINUTE = 60;

/** Mid-hour and at the start of a minute, so no bucket turns over while a test runs. */
const midHour = () => Math.floor(Date.now() / (HOUR * 1000)) * HOUR * 1000 + 30 * MINUTE * 1000;

for (const kind of ['memory', 'redis'] as const) {
  test(`[${kind}] an hour's count outlives the sweep that a one-minute key's hits set off`, async (t) => {
    const state = stateOf(kind, t);
    const now = midHour();
    for (let i = 0; i < 5; i++) await state.counters.hit('env\u0000hourly-actor\u0000export', HOUR, now);
    // Two minutes on, the one-minute key's bucket is new and the hour's is the same.
    const later = now + 2 * MINUTE * 1000;
    for (let i = 0; i < SWEEP_EVERY_HITS; i++) await state.counters.hit(`env\u0000actor-${i % 50}\u0000payment`, MINUTE, later);
    t.is(await state.counters.hit('env\u0000hourly-actor\u0000export', HOUR, later), 6);
  });

  test(`[${kind}] a key whose policy changed its window counts afresh`, async (t) => {
    const state = stateOf(kind, t);
    const now = midHour();
    for (let i = 0; i < 3; i++) await state.counters.hit('env\u0000actor\u0000payment', MINUTE, now);
    t.is(await state.counters.hit('env\u0000actor\u0000payment', MINUTE, now), 4);
    // After a reload that gave the policy an hour's window, the minute's buckets no longer apply.
    t.is(await state.counters.hit('env\u0000actor\u0000payment', HOUR, now), 1);
  });

  test(`[${kind}] a quota counts only what it lets through, and its wait is the first moment the sliding count falls below the limit`, async (t) => {
    const state = stateOf(kind, t);
    const key = 'quota\u0000key_1';
    const edge = midHour() + MINUTE * 1000;
    const late = edge - 10_000; // ten seconds before a minute's edge
    // Concurrent takers, of one process or several sharing Redis, cannot all take the last of the room.
    t.deepEqual((await Promise.all(Array.from({ length: 12 }, () => state.counters.take(key, MINUTE, 5, late)))).filter((w) => w === 0).length, 5);
    // The minute's five still count in full at the edge; a millisecond on, the estimate reads four.
    for (let i = 0; i < 20; i++) t.is(await state.counters.take(key, MINUTE, 5, late), 10_001, 'refusals are not counted');
    t.is(await state.counters.take(key, MINUTE, 5, edge), 1);
    t.is(await state.counters.take(key, MINUTE, 5, edge + 1), 0);
    // Now 1 + floor(5 × overlap): below five once the previous minute's share is under four, 12 s in.
    t.is(await state.counters.take(key, MINUTE, 5, edge + 1), 12_000);
    t.is(await state.counters.take(key, MINUTE, 5, edge + 12_000), 1);
    t.is(await state.counters.take(key, MINUTE, 5, edge + 12_001), 0);
    // A policy's velocity count, on the same counter, still counts every attempt.
    for (let i = 1; i <= 3; i++) t.is(await state.counters.hit('env\u0000actor\u0000payment', MINUTE, late), i);
  });
}
