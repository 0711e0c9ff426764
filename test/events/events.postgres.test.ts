import anyTest, { type TestFn } from 'ava';
import type { RunningTps } from '../helpers/tps.js';
import { registerEventsSuite } from './suite.js';

registerEventsSuite(anyTest as TestFn<{ tps: RunningTps }>, 'postgres');
