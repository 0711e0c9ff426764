import zlib from 'node:zlib';
import type { Explanation } from '../api/types.js';
import { EXPLANATION_DICTIONARY_V1 } from './explanationDictionary.js';

// An explanation is 1–1.5 KB of JSON that repeats the same keys, signal and rule names in every
// event. Raw deflate with a preset dictionary of sample explanations stores it in ~100 bytes, which
// is what keeps an event under 1 KiB. The first byte names the dictionary, so a later dictionary
// can be added without rewriting old rows.
const V1 = 1;
const DICTIONARIES: Record<number, Buffer> = { [V1]: Buffer.from(EXPLANATION_DICTIONARY_V1) };

// Setting up deflate and loading the dictionary, not compressing, is most of an encode's cost. A
// 16 KiB window still holds the whole dictionary and an explanation (same size out), and sets up
// in a quarter to a third less time than the default 32 KiB. Inflate's default window reads any
// smaller one, so this changes no stored format.
const DEFLATE: zlib.ZlibOptions = { windowBits: 14, memLevel: 5 };

const CURRENT = { version: V1, options: { ...DEFLATE, dictionary: DICTIONARIES[V1]! } };

export function encodeExplanation(explanation: Explanation): Buffer {
  return Buffer.concat([Buffer.of(CURRENT.version), zlib.deflateRawSync(JSON.stringify(explanation), CURRENT.options)]);
}

export function decodeExplanation(stored: Buffer | Uint8Array): Explanation {
  const buf = Buffer.isBuffer(stored) ? stored : Buffer.from(stored);
  const dictionary = DICTIONARIES[buf[0]!];
  if (!dictionary) throw new Error(`stored explanation uses unknown dictionary ${buf[0]}`);
  return JSON.parse(zlib.inflateRawSync(buf.subarray(1), { dictionary }).toString('utf8')) as Explanation;
}
