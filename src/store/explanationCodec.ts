import zlib from 'node:zlib';
import { Compressor, Decompressor } from 'zstd-napi';
import type { Explanation } from '../api/types.js';
import { EXPLANATION_DICTIONARY_V1 } from './explanationDictionary.js';
import { EXPLANATION_DICTIONARY_BASE64 } from './explanationDictionaryV2.js';

// An explanation is 1–1.5 KB of JSON that repeats the same keys, signal and rule names in every
// event; compressed with a dictionary built from such explanations it takes ~100 bytes, which is
// what keeps an event under 1 KiB. The first byte names the format (codec and dictionary), so a
// later one can be added without rewriting old rows.
//
// V1: raw deflate with a preset dictionary of sample explanations. Read only: every deflate call
// builds a zlib stream and loads the dictionary into it again, ~35–50 µs per explanation.
// V2 (written): zstd with a dictionary trained on the demo history. The compressor digests the
// dictionary once and keeps it, so an explanation takes ~5 µs.
const V1 = 1;
const V2 = 2;
const V1_DICTIONARY = Buffer.from(EXPLANATION_DICTIONARY_V1);
const V2_DICTIONARY = Buffer.from(EXPLANATION_DICTIONARY_BASE64, 'base64');

// Level 3 (zstd's default): level 5 is ~15% smaller and takes twice as long. The frame carries
// neither checksum nor dictionary id: the row is the unit of integrity and the first byte names
// the format, dictionary included.
const compressor = new Compressor();
compressor.setParameters({ compressionLevel: 3, checksumFlag: false, dictIDFlag: false });
compressor.loadDictionary(V2_DICTIONARY);
const decompressor = new Decompressor();
decompressor.loadDictionary(V2_DICTIONARY);

const FORMAT = Buffer.of(V2);

export function encodeExplanation(explanation: Explanation): Buffer {
  return Buffer.concat([FORMAT, compressor.compress(Buffer.from(JSON.stringify(explanation)))]);
}

export function decodeExplanation(stored: Buffer | Uint8Array): Explanation {
  const buf = Buffer.isBuffer(stored) ? stored : Buffer.from(stored);
  const body = buf.subarray(1);
  switch (buf[0]) {
    case V2:
      return JSON.parse(decompressor.decompress(body).toString('utf8')) as Explanation;
    case V1:
      return JSON.parse(zlib.inflateRawSync(body, { dictionary: V1_DICTIONARY }).toString('utf8')) as Explanation;
    default:
      throw new Error(`stored explanation uses unknown format ${buf[0]}`);
  }
}
