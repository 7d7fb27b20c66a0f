/**
 * The request of a plain template, one key (SET key value, GET key, ...),
 * encoded as the general CommandEncoder does it, byte for byte, at less cost
 * per request: the fixed parts (the array header, the command name and any
 * other literal argument with its length) are copied whole, and the key is
 * written straight into the output (its hash, which the value derives from,
 * read back from there) instead of through a scratch buffer. Chosen once,
 * when the encoder is made; every other template takes the general path.
 */
import { copyBytes, decimalDigits, fnv1a32, writeDecimal, writePadded } from './keys.js';
import { contentHash, type ValueFactory } from './values.js';

const PLAIN_END = 0;
const PLAIN_KEY = 1;
const PLAIN_DATA = 2;

/** A template argument's parts, as command.ts's Template holds them. */
type PartLike = { kind: 'literal'; bytes: Buffer } | { kind: string };

export class PlainRequest {
  /** The key hash of the last request encoded. */
  keyHash = 0;

  /** chunks[i] (fixed bytes), then the argument after[i] names: the key's, the value's, or none (the end). */
  private constructor(
    private readonly chunks: Buffer[],
    private readonly after: Uint8Array,
    private readonly prefix: Buffer,
    private readonly values: ValueFactory,
  ) {}

  /**
   * The plain form of a template, or null: each argument all literal, or
   * exactly `__key__`, or exactly `__data__` after the key's argument.
   * Anything else (inline, several keys, `__rand_int__`, `__tag__`, a
   * placeholder inside a word, a value before its key) is the general
   * encoder's.
   */
  static of(args: readonly (readonly PartLike[])[], inline: boolean, keyCount: number, prefix: Buffer, values: ValueFactory): PlainRequest | null {
    if (inline || keyCount !== 1) return null;
    const chunks: Buffer[] = [];
    const after: number[] = [];
    let fixed: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
    let keySeen = false;
    for (const parts of args) {
      const literals = parts.filter((p): p is { kind: 'literal'; bytes: Buffer } => p.kind === 'literal');
      if (literals.length === parts.length) {
        const bytes = Buffer.concat(literals.map((p) => p.bytes));
        fixed.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from('\r\n'));
        continue;
      }
      const kind = parts.length === 1 ? parts[0].kind : null;
      if (kind === 'key' && !keySeen) keySeen = true;
      else if (kind !== 'data' || !keySeen) return null;
      chunks.push(Buffer.concat(fixed));
      after.push(kind === 'key' ? PLAIN_KEY : PLAIN_DATA);
      fixed = [];
    }
    if (!keySeen) return null;
    chunks.push(Buffer.concat(fixed));
    after.push(PLAIN_END);
    return new PlainRequest(chunks, Uint8Array.from(after), prefix, values);
  }

  /** Writes the request for key `keyIndex` at `at`, its value of `generation` (0: the key's own hash); returns its length. */
  encode(out: Buffer, at: number, keyIndex: number, generation: number): number {
    const chunks = this.chunks;
    const prefix = this.prefix;
    let pos = at;
    let h = 0;
    for (let i = 0; i < chunks.length; i++) {
      const c = chunks[i];
      pos += copyBytes(c, 0, c.length, out, pos);
      const kind = this.after[i];
      if (kind === PLAIN_KEY) {
        const digits = decimalDigits(keyIndex);
        const keyLen = prefix.length + digits;
        pos = lengthHeader(out, pos, keyLen);
        const start = pos;
        pos += copyBytes(prefix, 0, prefix.length, out, pos);
        pos += writePadded(out, pos, keyIndex, digits);
        h = fnv1a32(out, start, keyLen);
        out[pos++] = 13;
        out[pos++] = 10;
      } else if (kind === PLAIN_DATA) {
        const size = this.values.sizeFor(h);
        pos = lengthHeader(out, pos, size);
        pos += this.values.writeValueOf(out, pos, h, generation === 0 ? h : contentHash(h, generation));
        out[pos++] = 13;
        out[pos++] = 10;
      }
    }
    this.keyHash = h;
    return pos - at;
  }
}

/** `$<n>\r\n` at `at`; returns the position after it. */
function lengthHeader(out: Buffer, at: number, n: number): number {
  out[at++] = 36; // '$'
  at += writeDecimal(out, at, n);
  out[at++] = 13;
  out[at++] = 10;
  return at;
}
