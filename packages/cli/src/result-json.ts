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
import { createRequire } from 'node:module';
import type HdrLib from 'hdr-histogram-js';
import { HIGHEST_TRACKABLE_NS, type HistogramData } from './engine-js/histogram.js';
import { printable } from './printable.js';
import { UsageError } from './usage-error.js';

/** What every V2 compressed histogram starts with in base64 (the compressed cookie's bytes). */
const HDR_BASE64_START = 'HISTF';

let loaded: typeof HdrLib | null = null;
/** hdr-histogram-js, loaded at the first histogram encoded or decoded: a run that writes none does not pay for it at start-up. */
export function hdrLib(): typeof HdrLib {
  return (loaded ??= createRequire(import.meta.url)('hdr-histogram-js') as typeof HdrLib);
}

/** One histogram of our layout, reused for every encoding: building one allocates its whole counts array. */
let scratch: ReturnType<typeof HdrLib.build> | null = null;

/** A histogram as HdrHistogram V2 compressed base64 (1 ns .. 2^40 ns, 3 significant digits, as the engines record). */
export function encodeHistogram(data: HistogramData): string {
  // An interval's other op kind is often empty: its encoding is always the same.
  if (data.buckets.length === 0 && emptyEncoded !== null) return emptyEncoded;
  const hdr = hdrLib();
  scratch ??= hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 3, bitBucketSize: 64, autoResize: false, useWebAssembly: false });
  scratch.reset();
  for (const [value, count] of data.buckets) if (count > 0) scratch.recordValueWithCount(value, count);
  const text = hdr.encodeIntoCompressedBase64(scratch);
  if (data.buckets.length === 0) emptyEncoded = text;
  return text;
}
let emptyEncoded: string | null = null;

/** The buckets of a V2 compressed base64 histogram; `where` names it in the message when it does not decode. */
export function decodeHistogram(text: string, where: string): HistogramData {
  let h: ReturnType<typeof HdrLib.decodeFromCompressedBase64>;
  try {
    h = hdrLib().decodeFromCompressedBase64(text, 64, false);
  } catch (err) {
    throw new UsageError(`${where}: not an HdrHistogram V2 compressed base64 histogram (${(err as Error).message})`);
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
