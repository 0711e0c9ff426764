// The documented continuityStrength formula, checked point by point (pure function).
import test from 'ava';
import { continuityStrength, humanRecency } from '../../src/browser/continuity.js';

test('weights: session 0.3, tab 0.3, device 0.2, human 0.2', (t) => {
  const none = { sameSession: false, sameTab: false, knownDevice: false };
  t.is(continuityStrength(none), 0);
  t.is(continuityStrength({ ...none, sameSession: true }), 0.3);
  t.is(continuityStrength({ ...none, sameTab: true }), 0.3);
  t.is(continuityStrength({ ...none, knownDevice: true }), 0.2);
  t.is(continuityStrength({ ...none, signalAgeSeconds: 0 }), 0.2);
  t.is(continuityStrength({ sameSession: true, sameTab: true, knownDevice: true, signalAgeSeconds: 5 }), 1);
});

test('human recency is 1 up to 30 s, then falls linearly to 0 at 300 s', (t) => {
  t.is(humanRecency(undefined), 0);
  t.is(humanRecency(30), 1);
  t.is(humanRecency(165), 0.5);
  t.is(humanRecency(300), 0);
  t.is(humanRecency(10_000), 0);
});
