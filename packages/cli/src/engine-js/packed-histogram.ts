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

/**
 * Packs buckets handed to it one at a time, ascending by counts index, into
 * its own bytes (grown when needed, kept for the next packing): a histogram
 * can be packed across several event-loop turns (IntervalClock's cut) while
 * other packings go on.
 */
export class PackedWriter {
  private bytes: Uint8Array;
  private used = 0;
  /** The counts index after the last bucket added. */
  private next = 0;

  constructor(capacity = 4096) {
    this.bytes = new Uint8Array(capacity);
  }

  /** Adds bucket `index` (above the last one added) with `count`. */
  add(index: number, count: number): void {
    this.push(index - this.next);
    this.push(count);
    this.next = index + 1;
  }

  /** What was added, packed; the writer starts over. */
  take(): PackedHistogram {
    const text = this.used === 0 ? '' : Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.used).toString('latin1');
    this.reset();
    return text === '' ? EMPTY_PACKED : new PackedHistogram(text);
  }

  /** Drops what was added. */
  reset(): void {
    this.used = 0;
    this.next = 0;
  }

  private push(n: number): void {
    if (this.used + 10 > this.bytes.length) {
      const grown = new Uint8Array(this.bytes.length * 2);
      grown.set(this.bytes);
      this.bytes = grown;
    }
    // Counts reach 2^53: divide, not shift (shifts are 32-bit).
    while (n >= GROUP) {
      this.bytes[this.used++] = (n % GROUP) | MORE;
      n = Math.floor(n / GROUP);
    }
    this.bytes[this.used++] = n;
  }
}

/** The packings done at once (not across turns) share one writer. */
const writer = new PackedWriter();

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
    for (let i = 0; i < counts.length; i++) {
      if (counts[i] > 0) writer.add(i, counts[i]);
    }
    return writer.take();
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
        writer.reset();
        const h = new LatencyHistogram();
        for (let j = 0; j < n; j++) h.recordCount(valueAt(j), countAt(j));
        return PackedHistogram.of(h);
      }
      writer.add(i, count);
      next = i + 1;
    }
    return writer.take();
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
    const emit = (index: number, count: number) => writer.add(index, count);
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
    return writer.take();
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
