/**
 * Figures read straight off a histogram's sparse bucket list
 * ([lowest equivalent ns, count], ascending), without building the dense
 * counts array a LatencyHistogram holds (a quarter of a megabyte): the time
 * series has one histogram per interval, thousands of them in a long run
 * with a short --interval. Same answers as LatencyHistogram's methods.
 */
import { countsIndex, valueFromIndex, type HistogramData } from './engine-js/histogram.js';

type Buckets = HistogramData['buckets'];

/** Two bucket lists added (one layout, so equal lowest values are one bucket). */
export function addBuckets(a: Buckets, b: Buckets): Buckets {
  const out: Buckets = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && a[i][0] < b[j][0])) out.push([a[i][0], a[i++][1]]);
    else if (i >= a.length || b[j][0] < a[i][0]) out.push([b[j][0], b[j++][1]]);
    else out.push([a[i][0], a[i++][1] + b[j++][1]]);
  }
  return out;
}

/** Two histograms added. */
export function addHistogramData(a: HistogramData, b: HistogramData): HistogramData {
  return { unit: 'ns', significantDigits: 3, buckets: addBuckets(a.buckets, b.buckets) };
}

/** The highest value that lands in the bucket whose lowest value is `lowest`. */
function highestEquivalent(lowest: number): number {
  return valueFromIndex(countsIndex(lowest) + 1) - 1;
}

export function totalOf(buckets: Buckets): number {
  let n = 0;
  for (const [, c] of buckets) n += c;
  return n;
}

/** HdrHistogram's valueAtPercentile (highest equivalent value of the bucket reached); 0 when empty. */
export function valueAtPercentileOfBuckets(buckets: Buckets, percentile: number, total = totalOf(buckets)): number {
  if (total === 0) return 0;
  const p = Math.min(Math.max(percentile, 0), 100);
  const target = Math.max(1, Math.floor((p / 100) * total + 0.5));
  let seen = 0;
  for (const [v, c] of buckets) {
    seen += c;
    if (seen >= target) return highestEquivalent(v);
  }
  return 0;
}

/** HdrHistogram's mean: each bucket at its median equivalent value (lowest + half its width, rounded down); 0 when empty. */
export function meanOfBuckets(buckets: Buckets, total = totalOf(buckets)): number {
  if (total === 0) return 0;
  let sum = 0;
  for (const [v, c] of buckets) {
    if (c <= 0) continue;
    const index = countsIndex(v);
    const lowest = valueFromIndex(index);
    sum += c * (lowest + Math.floor((valueFromIndex(index + 1) - lowest) / 2));
  }
  return sum / total;
}

/** The highest equivalent value of the top non-empty bucket; 0 when empty. */
export function maxOfBuckets(buckets: Buckets): number {
  return buckets.length === 0 ? 0 : highestEquivalent(buckets[buckets.length - 1][0]);
}
