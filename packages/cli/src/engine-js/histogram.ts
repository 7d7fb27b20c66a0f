/**
 * A latency histogram with HdrHistogram's bucket layout (lowest discernible
 * value 1 ns, highest 2^40 ns, 3 significant digits). Rust's `hdrhistogram`
 * crate with the same bounds indexes values identically, so histograms from
 * either engine, or from several machines, merge by adding counts.
 *
 * The serialised form is the sparse list of non-empty buckets as
 * [lowest equivalent value in ns, count], ascending.
 */

const SUB_BUCKET_HALF_COUNT_MAGNITUDE = 10;
const SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_COUNT = SUB_BUCKET_HALF_COUNT * 2;
export const HIGHEST_TRACKABLE_NS = 2 ** 40;
const BUCKET_COUNT = 31;
const COUNTS_LENGTH = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT;
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
 * One histogram per operation kind, indexed by the request's op (OP_SET = 0,
 * OP_GET = 1; a -t test or a command on the line is one of the two): a reply
 * is recorded in its op's only, and the whole run's histogram is their sum,
 * so the per-command rows add up to the totals by construction. Paired with
 * OpHistograms in crates/respbench-core/src/histogram.rs.
 */
export class OpHistograms {
  readonly byOp: [LatencyHistogram, LatencyHistogram] = [new LatencyHistogram(), new LatencyHistogram()];

  get set(): LatencyHistogram {
    return this.byOp[0];
  }

  get get(): LatencyHistogram {
    return this.byOp[1];
  }

  get total(): number {
    return this.byOp[0].total + this.byOp[1].total;
  }

  /** Both ops' counts in one histogram. */
  sum(): LatencyHistogram {
    const h = new LatencyHistogram();
    h.merge(this.byOp[0]);
    h.merge(this.byOp[1]);
    return h;
  }

  /** valueAtPercentile over both ops' counts, without building their sum. */
  valueAtPercentile(percentile: number): number {
    return valueAtPercentileOf(this.byOp, percentile);
  }

  merge(other: OpHistograms): void {
    this.byOp[0].merge(other.byOp[0]);
    this.byOp[1].merge(other.byOp[1]);
  }

  reset(): void {
    this.byOp[0].reset();
    this.byOp[1].reset();
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
