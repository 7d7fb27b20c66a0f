/**
 * The value written for each key, derived from the key bytes and the size
 * spec alone, so any run can verify what an earlier run wrote. The
 * TypeScript half of docs/workload.md's values, paired with
 * crates/respbench-core/src/values.rs.
 */
import { copyBytes, fmix32, fnv1a32, KeyStream } from './keys.js';

const FILL_SEED = 0x5eedf111;
export const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const HEX = '0123456789abcdef';

/** Value sizes: a fixed size (min === max) or a range drawn per key. */
export interface ValueSizeSpec {
  min: number;
  max: number;
}

/**
 * The values of one run. The first 8 bytes (or fewer) are the
 * key's FNV-1a hash in hex; the rest is a slice of a fixed filler table
 * starting at an offset taken from the hash.
 */
export class ValueFactory {
  readonly fill: Buffer;
  constructor(readonly sizes: ValueSizeSpec) {
    this.fill = fillTable(sizes.max + 64);
  }

  /** Size of the value for a key whose hash is `h`. */
  sizeFor(h: number): number {
    const { min, max } = this.sizes;
    if (min === max) return min;
    return min + (fmix32(h) % (max - min + 1));
  }

  /** Writes the value for the key hashed to `h` into `out` at `at`; returns its length. */
  writeValue(out: Buffer, at: number, h: number): number {
    const size = this.sizeFor(h);
    const head = size < 8 ? size : 8;
    for (let i = 0; i < head; i++) {
      out[at + i] = HEX.charCodeAt((h >>> (28 - 4 * i)) & 15);
    }
    if (size > 8) {
      const off = h >>> 26;
      copyBytes(this.fill, off + 8, off + size, out, at + 8);
    }
    return size;
  }

  /** True when `len` bytes of `buf` at `at` are exactly the value for hash `h`. */
  matches(buf: Uint8Array, at: number, len: number, h: number): boolean {
    const size = this.sizeFor(h);
    if (len !== size) return false;
    const head = size < 8 ? size : 8;
    for (let i = 0; i < head; i++) {
      if (buf[at + i] !== HEX.charCodeAt((h >>> (28 - 4 * i)) & 15)) return false;
    }
    if (size > 8) {
      const off = h >>> 26;
      return this.fill.compare(buf, at + 8, at + size, off + 8, off + size) === 0;
    }
    return true;
  }

  /** The value for the key bytes `key[at..at+len)`, as a new Buffer (messages and tests; not the hot path). */
  valueForKey(key: Uint8Array, at = 0, len = key.length - at): Buffer {
    const h = fnv1a32(key, at, len);
    const out = Buffer.alloc(this.sizeFor(h));
    this.writeValue(out, 0, h);
    return out;
  }
}

/**
 * The smallest value that verifies: its first 8 bytes are the key's whole
 * 32-bit hash. A shorter value carries only part of it, so another key's
 * value often equals it (at 1 byte, 1 key in 16) and --verify-get could not
 * tell them apart.
 */
export const VERIFY_MIN_VALUE_SIZE = 8;

/**
 * The largest keyspace whose written keys a run tracks to tell a lost write
 * from a miss: one bit per key, 16 MiB at most.
 */
export const WRITTEN_KEYS_MAX_KEYSPACE = 2 ** 27;

/**
 * Keys this run wrote and the server acknowledged, one bit per key index,
 * allocated once per run (mixed mode with --verify-get). A read sent after a
 * key's write was acknowledged must find a value; nil then is a lost write.
 */
export class WrittenKeys {
  private readonly bits: Uint32Array;
  constructor(keyspace: number) {
    this.bits = new Uint32Array(Math.ceil(keyspace / 32));
  }
  add(index: number): void {
    this.bits[index >>> 5] |= 1 << (index & 31);
  }
  has(index: number): boolean {
    return (this.bits[index >>> 5] & (1 << (index & 31))) !== 0;
  }
}

/** Offset of the first byte where a[aAt..aAt+aLen) and b[bAt..bAt+bLen) differ (the shorter length when one is a prefix of the other). */
export function firstDifference(a: Uint8Array, aAt: number, aLen: number, b: Uint8Array, bAt: number, bLen: number): number {
  const n = Math.min(aLen, bLen);
  for (let i = 0; i < n; i++) if (a[aAt + i] !== b[bAt + i]) return i;
  return n;
}

let cachedFill: Buffer | null = null;

/** The filler table: ALPHABET[x % 62] for the outputs x of stream (FILL_SEED, 0). */
export function fillTable(length: number): Buffer {
  if (cachedFill && cachedFill.length >= length) return cachedFill;
  const out = Buffer.allocUnsafe(length);
  const stream = new KeyStream(FILL_SEED, 0);
  for (let i = 0; i < length; i++) out[i] = ALPHABET.charCodeAt(stream.nextU32() % 62);
  cachedFill = out;
  return out;
}
