/**
 * A result's file form (`--json`, `--json-file`, merge's and compare's
 * input): compact JSON on one line unless asked pretty, every latency
 * histogram as one HdrHistogram V2 compressed base64 string (the form
 * `--hdr-log` writes and HdrHistogram's tools read) instead of a list of
 * buckets, and the file written whole (files.ts writeWhole).
 *
 * Readers take both forms: a histogram is either that string or the object
 * `{ unit, significantDigits, buckets: [[ns, count], …] }` results wrote
 * before (RunResult version 2). In memory it is always the object.
 */
import { readFileSync } from 'node:fs';
import { deflateSync, inflateSync } from 'node:zlib';
import { createRequire } from 'node:module';
import type HdrLib from 'hdr-histogram-js';
import { countsIndex, HIGHEST_TRACKABLE_NS, type HistogramData } from './engine-js/histogram.js';
import { printable } from './printable.js';
import { UsageError } from './usage-error.js';

/** What every V2 compressed histogram starts with in base64 (the compressed cookie's bytes). */
const HDR_BASE64_START = 'HISTF';

let loaded: typeof HdrLib | null = null;
/** hdr-histogram-js, loaded at the first histogram decoded (or log written): a run that reads none does not pay for it. */
export function hdrLib(): typeof HdrLib {
  return (loaded ??= createRequire(import.meta.url)('hdr-histogram-js') as typeof HdrLib);
}

/** V2 encoding cookies (HdrHistogram's, with the word-size nibble set as its encoders set it). */
const V2_COOKIE = 0x1c849313;
const V2_COMPRESSED_COOKIE = 0x1c849314;
/** Cookie, payload length, normalizing offset, digits (4 bytes each), lowest, highest, conversion ratio (8 each). */
const V2_HEADER_BYTES = 40;

/**
 * A histogram as HdrHistogram V2 compressed base64 (1 ns .. 2^40 ns, 3
 * significant digits, as the engines record): the bytes hdr-histogram-js's
 * encodeIntoCompressedBase64 writes (same header, ZigZag LEB128 counts with
 * runs of zeros as one negative word, zlib deflate at its defaults), written
 * here from the sparse buckets: loading that library and filling its dense
 * histogram cost every --json run tens of ms of CPU.
 */
export function encodeHistogram(data: HistogramData): string {
  // Counts by index, ascending (a bucket list from a file may repeat an index).
  const byIndex = new Map<number, number>();
  for (const [value, count] of data.buckets) {
    if (count <= 0) continue;
    const v = Math.min(Math.max(Math.round(value), 0), HIGHEST_TRACKABLE_NS - 1);
    const i = countsIndex(v);
    byIndex.set(i, (byIndex.get(i) ?? 0) + count);
  }
  const indexes = [...byIndex.keys()].sort((a, b) => a - b);
  // Words: at most two per bucket (a run of zeros before it, its count), 9 bytes each, and the empty histogram's one.
  const out = Buffer.alloc(V2_HEADER_BYTES + 18 * indexes.length + 1);
  let at = V2_HEADER_BYTES;
  const word = (n: number) => {
    // ZigZag, then LEB128 (7 bits a byte, low first; the 9th byte takes 8 bits), as HdrHistogram's ZigZagEncoding.
    let z = n >= 0 ? n * 2 : -n * 2 - 1;
    for (let k = 0; k < 8 && z >= 0x80; k++) {
      out[at++] = (z % 0x80) | 0x80;
      z = Math.floor(z / 0x80);
    }
    out[at++] = z;
  };
  if (indexes.length === 0) word(0);
  let next = 0;
  for (const i of indexes) {
    const zeros = i - next;
    if (zeros > 1) word(-zeros);
    else if (zeros === 1) word(0);
    word(byIndex.get(i)!);
    next = i + 1;
  }
  out.writeInt32BE(V2_COOKIE, 0);
  out.writeInt32BE(at - V2_HEADER_BYTES, 4);
  out.writeInt32BE(1, 8);
  out.writeInt32BE(3, 12);
  out.writeBigInt64BE(1n, 16);
  out.writeBigInt64BE(BigInt(HIGHEST_TRACKABLE_NS), 24);
  out.writeBigInt64BE(1n, 32);
  const compressed = deflateSync(out.subarray(0, at));
  const whole = Buffer.alloc(8 + compressed.length);
  whole.writeInt32BE(V2_COMPRESSED_COOKIE, 0);
  whole.writeInt32BE(compressed.length, 4);
  compressed.copy(whole, 8);
  return whole.toString('base64');
}

/** The index of the histogram's top bucket (2^40 ns − 1). */
const LAST_INDEX = countsIndex(HIGHEST_TRACKABLE_NS - 1);
/** The largest ZigZag word a count of a run can be: 2 × (2^53 − 1); a run of zeros is smaller still. */
const LARGEST_WORD = 2 * Number.MAX_SAFE_INTEGER;

/**
 * Why the words of a V2 compressed histogram cannot be a run's, or null:
 * a count past 2^53 − 1 (JavaScript's whole numbers, and more replies than
 * any run answers), or a count past the histogram's range. hdr-histogram-js
 * decodes the first by wrapping it (a bucket of 2^62 read back as a small
 * count and merged without a word) and drops the second, so the words are
 * read here first. Bytes that are no V2 histogram are left to the decoder
 * to name.
 */
function wordsNoRunHas(text: string): string | null {
  let payload: Buffer;
  try {
    const whole = Buffer.from(text, 'base64');
    if (whole.length < 8 || whole.readInt32BE(0) !== V2_COMPRESSED_COOKIE) return null;
    payload = inflateSync(whole.subarray(8, 8 + whole.readInt32BE(4)));
  } catch {
    return null;
  }
  if (payload.length < V2_HEADER_BYTES) return null;
  const end = Math.min(payload.length, V2_HEADER_BYTES + Math.max(0, payload.readInt32BE(4)));
  let at = V2_HEADER_BYTES;
  // Counts index by index: a word is a count (even: ZigZag of n ≥ 0) or a run of zeros (odd).
  let index = 0;
  while (at < end) {
    // LEB128, low 7 bits first, up to 9 bytes (the 9th carries 8 bits): exact in a double below 2^53, and past it still far over the limit.
    let word = 0;
    let scale = 1;
    for (let k = 0; at < end; k++) {
      const b = payload[at++];
      if (k === 8) {
        word += b * scale;
        break;
      }
      word += (b & 0x7f) * scale;
      scale *= 0x80;
      if ((b & 0x80) === 0) break;
    }
    if (word > LARGEST_WORD) return `a bucket's count is past ${Number.MAX_SAFE_INTEGER} (no run counts that many replies)`;
    if (word % 2 === 1) index += (word + 1) / 2;
    else {
      // The decoder drops a count past the histogram's range without a word; no run records one (a slower reply counts in the top bucket).
      if (word > 0 && index > LAST_INDEX) return 'a bucket is at or past 2^40 ns, beyond the histogram\'s range (a slower reply counts in its top bucket)';
      index++;
    }
  }
  return null;
}

/** The buckets of a V2 compressed base64 histogram; `where` names it in the message when it does not decode. */
export function decodeHistogram(text: string, where: string): HistogramData {
  const tooLarge = wordsNoRunHas(text);
  if (tooLarge !== null) throw new UsageError(`${where}: ${tooLarge}`);
  let h: ReturnType<typeof HdrLib.decodeFromCompressedBase64>;
  try {
    h = hdrLib().decodeFromCompressedBase64(text, 64, false);
  } catch (err) {
    const why = (err as Error)?.message;
    throw new UsageError(`${where}: not an HdrHistogram V2 compressed base64 histogram${why ? ` (${why})` : ''}`);
  }
  const js = h as unknown as { countsArrayLength: number; getCountAtIndex(i: number): number; valueFromIndex(i: number): number; lowestDiscernibleValue: number; numberOfSignificantValueDigits: number };
  if (js.lowestDiscernibleValue !== 1 || js.numberOfSignificantValueDigits !== 3) {
    throw new UsageError(`${where}: a histogram of another layout (lowest ${js.lowestDiscernibleValue}, ${js.numberOfSignificantValueDigits} digits); respbench's are 1 ns, 3 digits`);
  }
  const buckets: [number, number][] = [];
  for (let i = 0; i < js.countsArrayLength; i++) {
    const count = js.getCountAtIndex(i);
    if (count > 0) buckets.push([js.valueFromIndex(i), count]);
  }
  return { unit: 'ns', significantDigits: 3, buckets };
}

function isHistogramData(v: unknown): v is HistogramData {
  return typeof v === 'object' && v !== null && (v as HistogramData).unit === 'ns' && Array.isArray((v as HistogramData).buckets);
}

/** Keys whose values are histograms (or, commandHistograms, lists of them) in every result shape. */
function holdsHistograms(key: string): boolean {
  return /(^h|H)istograms?$/.test(key);
}

/**
 * The reader's half, for every result shape (run, merge, -t suite, capacity):
 * each histogram given as a V2 base64 string becomes the bucket object; the
 * old bucket objects stay as they are. Changes `value` in place and returns it.
 */
export function decodeHistograms<T>(value: T, file: string): T {
  const walk = (v: unknown, at: string): unknown => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => (v[i] = walk(x, `${at}[${i}]`)));
      return v;
    }
    if (typeof v !== 'object' || v === null) return v;
    const o = v as Record<string, unknown>;
    for (const [k, x] of Object.entries(o)) {
      const where = at === '' ? k : `${at}.${k}`;
      if (holdsHistograms(k)) o[k] = decodeField(x, where);
      else if (typeof x === 'object' && x !== null) o[k] = walk(x, where);
    }
    return o;
  };
  const decodeField = (x: unknown, where: string): unknown => {
    if (typeof x === 'string') {
      if (!x.startsWith(HDR_BASE64_START)) throw new UsageError(`${printable(file)}: ${where} is neither a histogram's bucket list nor HdrHistogram V2 base64`);
      return decodeHistogram(x, `${printable(file)}: ${where}`);
    }
    if (Array.isArray(x)) return x.map((h, i) => decodeField(h, `${where}[${i}]`));
    return x;
  };
  return walk(value, '') as T;
}

/** The file form's text: one line, or indented with `pretty`. */
export function resultJsonText(value: unknown, pretty = false): string {
  // Encoded as the text is made, not in a copy first: a long series is not held twice.
  return JSON.stringify(value, (_key, v: unknown) => (isHistogramData(v) ? encodeHistogram(v) : v), pretty ? 2 : undefined);
}

/** A result file read and parsed, histograms decoded (either form); unreadable or not JSON: a usage error naming the file. */
export function readResultJson(file: string, what = 'give the --json output of respbench'): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${printable(file)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${printable(file)} is not JSON: ${what}`);
  }
  return decodeHistograms(parsed, file);
}
