import anyTest, { type TestFn } from 'ava';
import type { RunningTps } from '../helpers/tps.js';
import { registerStreamSuite } from './stream-suite.js';

registerStreamSuite(anyTest as TestFn<{ tps: RunningTps }>, 'sqlite');
