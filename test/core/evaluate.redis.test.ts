import anyTest, { type TestFn } from 'ava';
import type { RunningTps } from '../helpers/tps.js';
import { registerEvaluateSuite } from './evaluate-suite.js';

registerEvaluateSuite(anyTest as TestFn<{ tps: RunningTps }>, 'sqlite', 'redis');
