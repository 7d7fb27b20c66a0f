/**
 * One interval's latency histogram kept small. A fine --interval over a
 * long run cuts thousands of intervals, each holding its non-empty buckets
 * until the run ends: as [value, count] arrays that is about 64 bytes a
 * bucket in V8, packed into a one-byte string 2–3. The buckets are decoded
 * each time `buckets` is read (the series' figures, the result's
 * histograms), and not kept.
 *
 * The packed form, the native engine's too
 * (crates/respbench-core/src/packed.rs, whose text crosses as it is): for
 * each non-empty bucket, ascending by counts index (histogram.ts's layout),
 * the gap from the bucket after the previous one (the first: its index),
 * then its count, each as 6-bit groups, least significant first, a group
 * followed by another carrying 0x40. Every character is ASCII.
 */
import { countsIndex, LatencyHistogram, valueFromIndex, type HistogramData } from './histogram.js';

/** Set on a group another follows. */
const MORE = 0x40;
/** Each group carries 6 bits: the number is taken 64 at a time. */
const GROUP = 64;

/** The growing bytes of one packing, reused (a cut packs one histogram at a time). */
let scratch = new Uint8Array(4096);
let used = 0;

function push(n: number): void {
  if (used + 10 > scratch.length) {
    const grown = new Uint8Array(scratch.length * 2);
    grown.set(scratch);
    scratch = grown;
  }
  // Counts reach 2^53: divide, not shift (shifts are 32-bit).
  while (n >= GROUP) {
    scratch[used++] = (n % GROUP) | MORE;
    n = Math.floor(n / GROUP);
  }
  scratch[used++] = n;
}

function take(): string {
  const text = Buffer.from(scratch.buffer, 0, used).toString('latin1');
  used = 0;
  return text;
}

/** A histogram's buckets packed; `buckets` decodes them. Stands wherever HistogramData does. */
export class PackedHistogram implements HistogramData {
  constructor(readonly packed: string) {}

  get unit(): 'ns' {
    return 'ns';
  }

  get significantDigits(): 3 {
    return 3;
  }

  /** [lowest equivalent value, count] for each non-empty bucket, ascending: decoded on every read. */
  get buckets(): [number, number][] {
    const out: [number, number][] = [];
    forEachPacked(this.packed, (index, count) => out.push([valueFromIndex(index), count]));
    return out;
  }

  /** Its bucket object, for JSON.stringify: the form every reader takes. */
  toJSON(): HistogramData {
    return { unit: 'ns', significantDigits: 3, buckets: this.buckets };
  }

  /** A recording's non-empty buckets, read straight off its counts. */
  static of(h: LatencyHistogram): PackedHistogram {
    const counts = h.counts;
    let next = 0;
    for (let i = 0; i < counts.length; i++) {
      if (counts[i] > 0) {
        push(i - next);
        push(counts[i]);
        next = i + 1;
      }
    }
    return new PackedHistogram(take());
  }

  static fromData(data: HistogramData): PackedHistogram {
    if (data instanceof PackedHistogram) return data;
    const buckets = data.buckets;
    return PackedHistogram.fromPairs(buckets.length, (k) => buckets[k][0], (k) => buckets[k][1]);
  }

  /** Bucket values and their counts side by side (a result file's histogram as merge reads it). */
  static fromValues(values: ArrayLike<number>, counts: ArrayLike<number>): PackedHistogram {
    return PackedHistogram.fromPairs(values.length, (k) => values[k], (k) => counts[k]);
  }

  private static fromPairs(n: number, valueAt: (k: number) => number, countAt: (k: number) => number): PackedHistogram {
    let next = 0;
    for (let k = 0; k < n; k++) {
      const count = countAt(k);
      if (count <= 0) continue;
      const i = countsIndex(valueAt(k));
      if (i < next) {
        // Not ascending, or two values of one bucket (a hand-made list): added up through a whole histogram.
        used = 0;
        const h = new LatencyHistogram();
        for (let j = 0; j < n; j++) h.recordCount(valueAt(j), countAt(j));
        return PackedHistogram.of(h);
      }
      push(i - next);
      push(count);
      next = i + 1;
    }
    return new PackedHistogram(take());
  }

  /** Two histograms added (equal buckets add their counts), packed, without building either's bucket list. */
  static add(a: HistogramData, b: HistogramData): PackedHistogram {
    const x = PackedHistogram.fromData(a);
    const y = PackedHistogram.fromData(b);
    if (y.packed === '') return x;
    if (x.packed === '') return y;
    const xs = indexed(x.packed);
    const ys = indexed(y.packed);
    let i = 0;
    let j = 0;
    let next = 0;
    const emit = (index: number, count: number) => {
      push(index - next);
      push(count);
      next = index + 1;
    };
    while (i < xs.length || j < ys.length) {
      if (j >= ys.length || (i < xs.length && xs[i] < ys[j])) {
        emit(xs[i], xs[i + 1]);
        i += 2;
      } else if (i >= xs.length || ys[j] < xs[i]) {
        emit(ys[j], ys[j + 1]);
        j += 2;
      } else {
        emit(xs[i], xs[i + 1] + ys[j + 1]);
        i += 2;
        j += 2;
      }
    }
    return new PackedHistogram(take());
  }
}

/** The empty histogram (an interval with no reply of an op kind): one for all. */
export const EMPTY_PACKED = new PackedHistogram('');

/** `(counts index, count)` of each non-empty bucket, ascending. */
function forEachPacked(packed: string, each: (index: number, count: number) => void): void {
  let at = 0;
  let next = 0;
  const number = (): number => {
    let n = 0;
    let scale = 1;
    for (;;) {
      const c = packed.charCodeAt(at++);
      n += (c & (GROUP - 1)) * scale;
      if ((c & MORE) === 0) return n;
      scale *= GROUP;
    }
  };
  while (at < packed.length) {
    const index = next + number();
    const count = number();
    each(index, count);
    next = index + 1;
  }
}

/** Index and count pairs flat: [index, count, index, count, …]. */
function indexed(packed: string): number[] {
  const out: number[] = [];
  forEachPacked(packed, (index, count) => out.push(index, count));
  return out;
}
