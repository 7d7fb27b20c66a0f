/**
 * A latency histogram with HdrHistogram's bucket layout (lowest discernible
 * value 1 ns, highest 2^40 ns, 3 significant digits). Rust's `hdrhistogram`
 * crate with the same bounds indexes values identically, so histograms from
 * either engine, or from several machines, merge by adding counts.
 *
 * The serialised form is the sparse list of non-empty buckets as
 * [lowest equivalent value in ns, count], ascending (HistogramData; result
 * files hold it as HdrHistogram V2 base64 instead: ../result-json.ts).
 */

const SUB_BUCKET_HALF_COUNT_MAGNITUDE = 10;
const SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_COUNT = SUB_BUCKET_HALF_COUNT * 2;
export const HIGHEST_TRACKABLE_NS = 2 ** 40;
const BUCKET_COUNT = 31;
export const COUNTS_LENGTH = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT;
const TWO_POW_32 = 4294967296;

export interface HistogramData {
  /** Always "ns". */
  unit: 'ns';
  significantDigits: 3;
  /** [lowest equivalent value, count] for each non-empty bucket, ascending. */
  buckets: [number, number][];
}

function floorLog2(v: number): number {
  return v >= TWO_POW_32 ? 63 - Math.clz32(Math.floor(v / TWO_POW_32)) : 31 - Math.clz32(v);
}

/** Index into the counts array for a value, as HdrHistogram's countsArrayIndex. */
export function countsIndex(value: number): number {
  if (value < TWO_POW_32) {
    // The same index in 32-bit integer arithmetic (every latency under 4.29 s): no division, no power of two.
    const bucket = 31 - Math.clz32(value < SUB_BUCKET_COUNT ? SUB_BUCKET_COUNT - 1 : value) - SUB_BUCKET_HALF_COUNT_MAGNITUDE;
    return ((bucket + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + ((value >>> bucket) - SUB_BUCKET_HALF_COUNT);
  }
  const bucket = floorLog2(value < SUB_BUCKET_COUNT ? SUB_BUCKET_COUNT - 1 : value) - SUB_BUCKET_HALF_COUNT_MAGNITUDE;
  const subBucket = Math.floor(value / 2 ** bucket);
  return ((bucket + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + (subBucket - SUB_BUCKET_HALF_COUNT);
}

/** Lowest value that lands in counts slot `index`. */
export function valueFromIndex(index: number): number {
  let bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1;
  let subBucket = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
  if (bucket < 0) {
    subBucket -= SUB_BUCKET_HALF_COUNT;
    bucket = 0;
  }
  return subBucket * 2 ** bucket;
}

function rangeSizeOfIndex(index: number): number {
  const bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1;
  return 2 ** (bucket < 0 ? 0 : bucket);
}

export class LatencyHistogram {
  readonly counts = new Float64Array(COUNTS_LENGTH);
  total = 0;

  /** Records one value in ns; values beyond the range count at the top. */
  record(ns: number): void {
    let v = ns < 0 ? 0 : Math.round(ns);
    if (v >= HIGHEST_TRACKABLE_NS) v = HIGHEST_TRACKABLE_NS - 1;
    this.counts[countsIndex(v)]++;
    this.total++;
  }

  /** Empties it, keeping its counts array. */
  reset(): void {
    this.counts.fill(0);
    this.total = 0;
  }

  recordCount(ns: number, count: number): void {
    let v = ns < 0 ? 0 : Math.round(ns);
    if (v >= HIGHEST_TRACKABLE_NS) v = HIGHEST_TRACKABLE_NS - 1;
    this.counts[countsIndex(v)] += count;
    this.total += count;
  }

  /** Adds another histogram's counts (from another connection, engine or machine). */
  merge(other: LatencyHistogram): void {
    for (let i = 0; i < COUNTS_LENGTH; i++) this.counts[i] += other.counts[i];
    this.total += other.total;
  }

  toData(): HistogramData {
    const buckets: [number, number][] = [];
    for (let i = 0; i < COUNTS_LENGTH; i++) {
      if (this.counts[i] > 0) buckets.push([valueFromIndex(i), this.counts[i]]);
    }
    return { unit: 'ns', significantDigits: 3, buckets };
  }

  static fromData(data: HistogramData): LatencyHistogram {
    const h = new LatencyHistogram();
    for (const [value, count] of data.buckets) h.recordCount(value, count);
    return h;
  }

  /** HdrHistogram's valueAtPercentile: highest equivalent value of the bucket reached. */
  valueAtPercentile(percentile: number): number {
    if (this.total === 0) return 0;
    const p = Math.min(Math.max(percentile, 0), 100);
    const target = Math.max(1, Math.floor((p / 100) * this.total + 0.5));
    let seen = 0;
    for (let i = 0; i < COUNTS_LENGTH; i++) {
      seen += this.counts[i];
      if (seen >= target) return valueFromIndex(i) + rangeSizeOfIndex(i) - 1;
    }
    return 0;
  }

  /** How many values recorded are at least `ns` (to the bucket's resolution). */
  countAtLeast(ns: number): number {
    let n = 0;
    for (let i = countsIndex(Math.max(0, Math.round(ns))); i < COUNTS_LENGTH; i++) n += this.counts[i];
    return n;
  }

  /** Lowest equivalent value of the lowest non-empty bucket. */
  min(): number {
    for (let i = 0; i < COUNTS_LENGTH; i++) {
      if (this.counts[i] > 0) return valueFromIndex(i);
    }
    return 0;
  }

  max(): number {
    for (let i = COUNTS_LENGTH - 1; i >= 0; i--) {
      if (this.counts[i] > 0) return valueFromIndex(i) + rangeSizeOfIndex(i) - 1;
    }
    return 0;
  }

  mean(): number {
    if (this.total === 0) return 0;
    let sum = 0;
    for (let i = 0; i < COUNTS_LENGTH; i++) {
      if (this.counts[i] > 0) sum += this.counts[i] * (valueFromIndex(i) + Math.floor(rangeSizeOfIndex(i) / 2));
    }
    return sum / this.total;
  }
}

/**
 * One histogram per command the run sends, indexed by the request's command
 * (PreparedPlan.commands: for --mode, 0 is the write command and 1 the read
 * one, so the index is the op; for a --command mix, the mix's order): a
 * reply is recorded in its command's only, and the whole run's histogram is
 * their sum, so the per-command rows add up to the totals by construction.
 * `set` and `get` are the sums over the commands of each op kind. Paired
 * with OpHistograms in crates/respbench-core/src/histogram.rs.
 */
export class OpHistograms {
  readonly byCommand: LatencyHistogram[];

  /** `ops[i]`: the op kind of command i (0 write side, 1 read side); default the two of --mode. */
  constructor(readonly ops: readonly number[] = [0, 1]) {
    this.byCommand = ops.map(() => new LatencyHistogram());
  }

  /** The write side's latencies (the histogram itself when --mode made the commands). */
  get set(): LatencyHistogram {
    return this.ofOp(0);
  }

  get get(): LatencyHistogram {
    return this.ofOp(1);
  }

  private ofOp(op: number): LatencyHistogram {
    if (this.ops.length === 2 && this.ops[0] === 0 && this.ops[1] === 1) return this.byCommand[op];
    const h = new LatencyHistogram();
    for (let i = 0; i < this.ops.length; i++) if (this.ops[i] === op) h.merge(this.byCommand[i]);
    return h;
  }

  get total(): number {
    return this.byCommand.reduce((n, h) => n + h.total, 0);
  }

  /** Every command's counts in one histogram. */
  sum(): LatencyHistogram {
    const h = new LatencyHistogram();
    for (const x of this.byCommand) h.merge(x);
    return h;
  }

  /** valueAtPercentile over every command's counts, without building their sum. */
  valueAtPercentile(percentile: number): number {
    return valueAtPercentileOf(this.byCommand, percentile);
  }

  merge(other: OpHistograms): void {
    for (let i = 0; i < this.byCommand.length; i++) this.byCommand[i].merge(other.byCommand[i]);
  }

  /**
   * Command `i`'s histogram, replaced by `empty` (recording goes on into
   * it): O(1), so that an interval's counts are read a slice at a time
   * (IntervalClock's cut). The histogram object is swapped, not its counts
   * array: a field that changes would cost the optimised recording code.
   */
  swap(i: number, empty: LatencyHistogram): LatencyHistogram {
    const taken = this.byCommand[i];
    this.byCommand[i] = empty;
    return taken;
  }

  reset(): void {
    for (const h of this.byCommand) h.reset();
  }

  /** An empty set of the same commands. */
  emptyLike(): OpHistograms {
    return new OpHistograms(this.ops);
  }
}

/** valueAtPercentile over several histograms' counts together, without building their sum. */
export function valueAtPercentileOf(hs: readonly LatencyHistogram[], percentile: number): number {
  const total = hs.reduce((n, h) => n + h.total, 0);
  if (total === 0) return 0;
  const p = Math.min(Math.max(percentile, 0), 100);
  const target = Math.max(1, Math.floor((p / 100) * total + 0.5));
  let seen = 0;
  for (let i = 0; i < COUNTS_LENGTH; i++) {
    for (const h of hs) seen += h.counts[i];
    if (seen >= target) return valueFromIndex(i) + rangeSizeOfIndex(i) - 1;
  }
  return 0;
}
