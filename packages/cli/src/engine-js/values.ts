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

/**
 * Mixes a value generation into the key's hash: content = h ^ g * MIX
 * (generation 0 leaves it as it was). An odd multiplier, so the generation
 * comes back from a value's first 8 bytes: g = (content ^ h) * MIX_INVERSE.
 * Paired with GENERATION_MIX in values.rs.
 */
export const GENERATION_MIX = 0x9e3779b1;
const GENERATION_MIX_INVERSE = 0x0e8b2f51;

/** The hash a value's bytes derive from: the key's, with generation `g` mixed in. */
export function contentHash(h: number, generation: number): number {
  return (h ^ Math.imul(generation, GENERATION_MIX)) >>> 0;
}

/** The generation a value of the key hashed to `h` whose bytes derive from `content` was written with. */
export function generationOf(h: number, content: number): number {
  return Math.imul((content ^ h) >>> 0, GENERATION_MIX_INVERSE) >>> 0;
}

/** The hash the first 8 bytes of `buf[at..at+len)` spell (lower-case hex), or -1. */
export function contentOf(buf: Uint8Array, at: number, len: number): number {
  if (len < 8) return -1;
  let content = 0;
  for (let i = 0; i < 8; i++) {
    const b = buf[at + i];
    const digit = b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x61 && b <= 0x66 ? b - 0x61 + 10 : -1;
    if (digit < 0) return -1;
    content = content * 16 + digit;
  }
  return content;
}

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
  constructor(
    readonly sizes: ValueSizeSpec,
    /** --value-generation: the generation every value is written with (mixed mode with --verify-get: the first of each key's, see key-names.ts). */
    readonly generation = 0,
  ) {
    this.fill = fillTable(sizes.max + 64);
  }

  /** Size of the value for a key whose hash is `h`. */
  sizeFor(h: number): number {
    const { min, max } = this.sizes;
    if (min === max) return min;
    return min + (fmix32(h) % (max - min + 1));
  }

  /** Writes the value for the key hashed to `h`, of the run's generation, into `out` at `at`; returns its length. */
  writeValue(out: Buffer, at: number, h: number): number {
    return this.writeValueOf(out, at, h, this.generation === 0 ? h : contentHash(h, this.generation));
  }

  /**
   * Writes the value for the key hashed to `key` whose bytes derive from
   * `h` (its hash with a generation mixed in) into `out` at `at`; returns its
   * length. The size is the key's, whatever the generation.
   */
  writeValueOf(out: Buffer, at: number, key: number, h: number): number {
    const size = this.sizeFor(key);
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

  /** True when `len` bytes of `buf` at `at` are exactly the value for hash `h`, of the run's generation. */
  matches(buf: Uint8Array, at: number, len: number, h: number): boolean {
    return this.matchesOf(buf, at, len, h, this.generation === 0 ? h : contentHash(h, this.generation));
  }

  /** True when `len` bytes of `buf` at `at` are exactly the value of the key hashed to `key` whose bytes derive from `h`. */
  matchesOf(buf: Uint8Array, at: number, len: number, key: number, h: number): boolean {
    const size = this.sizeFor(key);
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
    return this.valueOfGeneration(fnv1a32(key, at, len), this.generation);
  }

  /** The value of the key hashed to `h` written with `generation` (messages and tests). */
  valueOfGeneration(h: number, generation: number): Buffer {
    const out = Buffer.alloc(this.sizeFor(h));
    this.writeValueOf(out, 0, h, contentHash(h, generation));
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
