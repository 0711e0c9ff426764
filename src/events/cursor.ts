import crypto from 'node:crypto';

// A cursor names a position (the store's seq) in one environment's events. The seq counts every
// environment's events, so shown as is it would tell a key how much the others write, and a key
// could forge cursors to find its own events' seqs. A cursor is therefore one AES block (a keyed
// permutation) under the service's secret: the seq, then a tag of the environment. It reads as
// noise, and one of another environment, or forged, fails its tag.
//
// A cursor is an event's (nextCursor, a stream's event id) or a position's (a stream's opening and
// heartbeat ids): a list before an event excludes it, one at a position has handled everything up
// to it and so includes its seq. The seq's top bit tells them apart (seqs stay below 2^53).
const POSITION = 1n << 63n;
const BLOCK = 16;
const TAG = 8;
// 16 bytes in base64url: 21 characters, then one whose low 4 bits are zero.
const FORM = /^[A-Za-z0-9_-]{21}[AQgw]$/;

/** The name of the cursors' secret in the store (serviceSecrets.ts). */
export const CURSOR_SECRET = 'event_cursor';

/** Whether text has a cursor's form; only decode() says whether it is one, and of which environment. */
export const hasCursorForm = (text: string): boolean => FORM.test(text);

const derive = (secret: Buffer, purpose: string): Buffer => Buffer.from(crypto.hkdfSync('sha256', secret, Buffer.alloc(0), `tps event cursor: ${purpose}`, 32));

export class CursorCodec {
  private readonly aesKey: Buffer;
  private readonly macKey: Buffer;

  /** secret: the service's (serviceSecrets.ts), so every process on the store issues and accepts the same cursors. */
  constructor(secret: Buffer) {
    this.aesKey = derive(secret, 'aes-256');
    this.macKey = derive(secret, 'environment tag');
  }

  /** The cursor of the event at seq. */
  encode(environment: string, seq: number): string {
    return this.seal(environment, BigInt(seq));
  }

  /** The cursor of a position: every event at or below seq has been handled. */
  encodePosition(environment: string, seq: number): string {
    return this.seal(environment, BigInt(seq) | POSITION);
  }

  /** The seq a cursor names, or undefined when it is not one this service issued to this environment. */
  decode(environment: string, cursor: string): number | undefined {
    return this.read(environment, cursor)?.seq;
  }

  /** What a cursor names: a seq, and whether it is a position's (encodePosition) rather than an event's. */
  read(environment: string, cursor: string): { seq: number; position: boolean } | undefined {
    if (!FORM.test(cursor)) return undefined;
    const block = this.run(crypto.createDecipheriv('aes-256-ecb', this.aesKey, null), Buffer.from(cursor, 'base64url'));
    if (!crypto.timingSafeEqual(block.subarray(BLOCK - TAG), this.tag(environment))) return undefined;
    const word = block.readBigUInt64BE();
    const seq = word & (POSITION - 1n);
    return seq <= BigInt(Number.MAX_SAFE_INTEGER) ? { seq: Number(seq), position: (word & POSITION) !== 0n } : undefined;
  }

  private seal(environment: string, word: bigint): string {
    const block = Buffer.alloc(BLOCK);
    block.writeBigUInt64BE(word);
    this.tag(environment).copy(block, BLOCK - TAG);
    return this.run(crypto.createCipheriv('aes-256-ecb', this.aesKey, null), block).toString('base64url');
  }

  private tag(environment: string): Buffer {
    return crypto.createHmac('sha256', this.macKey).update(environment).digest().subarray(0, TAG);
  }

  private run(cipher: crypto.Cipher | crypto.Decipher, block: Buffer): Buffer {
    // One block exactly: no padding, so a cursor is 22 characters.
    cipher.setAutoPadding(false);
    return Buffer.concat([cipher.update(block), cipher.final()]);
  }
}
