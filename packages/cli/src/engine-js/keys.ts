/**
 * Which keys a run touches and their bytes: the seeded xoshiro128** streams,
 * the key patterns that draw indexes from them, `<prefix><index>` written as
 * bytes, FNV-1a over those bytes, and the decimal digits every length header
 * and key needs. The TypeScript half of docs/workload.md, paired with
 * crates/respbench-core/src/keys.rs; both are pinned by
 * test/vectors/workload.json.
 *
 * Everything here that runs per request works on numbers and preallocated
 * buffers only: no strings are built and nothing is allocated.
 */

const GOLDEN = 0x9e3779b9;
const STREAM_SALT = 0x85ebca77;
const TWO_POW_26 = 67108864;
/** XORed into the seed for the stream that fills __rand_int__, so it never shifts the key stream. */
export const RAND_INT_SALT = 0x52414e44;

/** murmur3's 32-bit finaliser: a bijection that spreads every input bit. */
export function fmix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * xoshiro128** seeded through splitmix32. 32-bit operations only, so the
 * TypeScript engine needs no BigInt and the Rust engine gets the same numbers.
 */
export class KeyStream {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  /** One independent stream per connection: `connection` 0, 1, 2, … */
  constructor(seed: number, connection: number) {
    let sm = fmix32((seed ^ Math.imul(connection, STREAM_SALT)) >>> 0);
    const next = (): number => {
      sm = (sm + GOLDEN) >>> 0;
      return fmix32(sm);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** Next unsigned 32-bit output. */
  nextU32(): number {
    const s1 = this.s1;
    const result = Math.imul(rotl(Math.imul(s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A 53-bit integer from two outputs (high 27 bits, then low 26). Exact in a double. */
  nextU53(): number {
    const hi = this.nextU32() >>> 5;
    const lo = this.nextU32() >>> 6;
    return hi * TWO_POW_26 + lo;
  }

  /** Key index in [0, keyspace). */
  nextKeyIndex(keyspace: number): number {
    return this.nextU53() % keyspace;
  }

  /** Mixed mode: true for a write, with probability setRatio/100. */
  nextIsSet(setRatio: number): boolean {
    return this.nextU32() % 100 < setRatio;
  }
}

/** How many of `total` requests connection `c` of `connections` sends. */
export function requestsForConnection(total: number, connections: number, c: number): number {
  const base = Math.floor(total / connections);
  return base + (c < total % connections ? 1 : 0);
}

/**
 * Copies src[from..to) into out at `at`; returns the length. Short runs (keys,
 * command names, 32-byte values) are copied by a loop: a native Buffer.copy
 * call costs more than the bytes it moves.
 */
export function copyBytes(src: Uint8Array, from: number, to: number, out: Uint8Array, at: number): number {
  const n = to - from;
  if (n > 64) return (src as Buffer).copy(out, at, from, to);
  for (let i = 0; i < n; i++) out[at + i] = src[from + i];
  return n;
}

/** The bytes `<prefix><index>` written into `out` at `at`; returns the length. */
export function writeKey(out: Buffer, at: number, prefix: Buffer, index: number): number {
  const n = copyBytes(prefix, 0, prefix.length, out, at);
  return n + writeDecimal(out, at + n, index);
}

/** How many decimal digits `n` (a non-negative integer) has. */
export function decimalDigits(n: number): number {
  // Lengths and key indexes are nearly always small: compare, don't divide.
  if (n < 10) return 1;
  if (n < 100) return 2;
  if (n < 1000) return 3;
  if (n < 10000) return 4;
  if (n < 100000) return 5;
  if (n < 1000000) return 6;
  let d = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    d++;
  }
  return d;
}

/** Writes `n` in decimal at `at`; returns the digit count. */
export function writeDecimal(out: Uint8Array, at: number, n: number): number {
  return writePadded(out, at, n, decimalDigits(n));
}

/**
 * Writes the low `width` decimal digits of `n` at `at`, zero-padded on the
 * left; returns `width`. Digits are written backwards from the end, no
 * string made.
 */
export function writePadded(out: Uint8Array, at: number, n: number, width: number): number {
  let i = width - 1;
  // Below 2^31 an integer division by 10 is exact in 32 bits (no float floor).
  for (; i >= 0 && n >= 2147483648; i--) {
    const q = Math.floor(n / 10);
    out[at + i] = 48 + (n - q * 10);
    n = q;
  }
  for (; i >= 0; i--) {
    const q = (n / 10) | 0;
    out[at + i] = 48 + (n - q * 10);
    n = q;
  }
  return width;
}

/** 32-bit FNV-1a over `len` bytes of `buf` from `at`. */
export function fnv1a32(buf: Uint8Array, at: number, len: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < at + len; i++) {
    h ^= buf[i];
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

// ---- Key patterns (docs/workload.md, "Key patterns") ----

export type KeyPattern = 'uniform' | 'sequential' | 'gaussian' | 'zipf';
export const KEY_PATTERNS: readonly KeyPattern[] = ['uniform', 'sequential', 'gaussian', 'zipf'];

const bits = new Float64Array(1);
const words = new Uint32Array(bits.buffer); // little-endian: words[1] is the high word
const LOG2E = 1.4426950408889634;
const LN2 = 0.6931471805599453;
const SQRT2 = 1.4142135623730951;
const TWO_POW_53 = 9007199254740992;

/** log2 for a >= 1 with basic arithmetic only, so both engines agree to the bit. */
export function detLog2(a: number): number {
  bits[0] = a;
  const hi = words[1];
  let e = ((hi >>> 20) & 0x7ff) - 1023;
  words[1] = (hi & 0x800fffff) | (1023 << 20);
  let m = bits[0];
  if (m > SQRT2) {
    m = m / 2;
    e = e + 1;
  }
  const t = (m - 1) / (m + 1);
  const t2 = t * t;
  let acc = 1 / 15;
  for (let k = 13; k >= 1; k -= 2) acc = 1 / k + t2 * acc;
  return e + 2 * t * acc * LOG2E;
}

/** 2^y with basic arithmetic only. */
export function detExp2(y: number): number {
  const k = Math.floor(y);
  const f = (y - k) * LN2;
  let acc = 1;
  for (let j = 16; j >= 1; j--) acc = 1 + (f / j) * acc;
  words[0] = 0;
  words[1] = (k + 1023) << 20;
  return acc * bits[0];
}

export function detPow(a: number, b: number): number {
  return detExp2(b * detLog2(a));
}

export interface KeyPatternSpec {
  keyPattern: KeyPattern;
  /** gaussian: standard deviation in keys (default keyspace / 6). */
  keyStddev: number | null;
  /** zipf: the exponent s (default 0.99). */
  zipfExponent: number;
}

/** Draws key indexes for one connection by the chosen pattern. */
export class KeyChooser {
  private i = 0;
  private readonly start: number;
  private readonly median: number;
  private readonly stddev: number;
  private readonly zipfScale: number;
  private readonly pattern: KeyPattern;
  private readonly s: number;

  constructor(spec: KeyPatternSpec, private readonly keyspace: number, connection: number, connections: number) {
    this.pattern = spec.keyPattern;
    this.start = connection * ((keyspace - (keyspace % connections)) / connections);
    this.median = keyspace / 2;
    this.stddev = spec.keyStddev ?? keyspace / 6;
    this.s = spec.zipfExponent;
    this.zipfScale = this.s !== 1 ? detPow(keyspace + 1, 1 - this.s) - 1 : 0;
  }

  next(stream: KeyStream): number {
    const n = this.keyspace;
    switch (this.pattern) {
      case 'uniform':
        return stream.nextU53() % n;
      case 'sequential': {
        const index = (this.start + this.i) % n;
        this.i++;
        return index;
      }
      case 'gaussian': {
        let total = 0;
        for (let k = 0; k < 12; k++) total += stream.nextU32();
        const z = total / 4294967296 - 6;
        const index = Math.floor(this.median + this.stddev * z);
        return index < 0 ? 0 : index > n - 1 ? n - 1 : index;
      }
      default: {
        const u = stream.nextU53() / TWO_POW_53;
        const x = this.s === 1 ? detPow(n + 1, u) : detPow(u * this.zipfScale + 1, 1 / (1 - this.s));
        const index = Math.floor(x) - 1;
        return index > n - 1 ? n - 1 : index < 0 ? 0 : index;
      }
    }
  }
}
