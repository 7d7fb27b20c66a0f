/**
 * How much a figure moves between two results by chance, from the results'
 * own data. Where there are rounds (`-x N` repeats, study rounds): Welch's
 * t-test on the rounds' figures (few rounds: a bootstrap of three would
 * understate their spread), the 95% interval of the difference of the
 * means as a ratio of BASE's. Otherwise the intervals a run recorded, in a
 * block bootstrap: each resample draws as many intervals as the side has,
 * with replacement, each interval's requests, duration and latency
 * histogram whole (the latencies of one moment stay together as they came,
 * which per-request resampling would not); the ratio NEW/BASE of paired
 * resamples gives the 95% interval. A figure whose interval holds 1 (100%)
 * is within noise.
 */
import { countsIndex, valueFromIndex, type HistogramData } from '../engine-js/histogram.js';

/** One interval of a run, as the bootstrap draws it. */
export interface Block {
  requests: number;
  durationSec: number;
  buckets: HistogramData['buckets'];
}

/** A side's units: the intervals of a run, or the figures of each round. */
export type Units = { kind: 'intervals'; blocks: Block[] } | { kind: 'rounds'; values: Record<string, number>[] };

export const RESAMPLES = 1000;
export const CONFIDENCE = 0.95;
/** Fewer units than this on either side: no estimate of the noise. */
export const MIN_UNITS = 3;

/** The figure names: `ops` (ops/s) and percentiles keyed `p50`, `p99.9`. */
function percentileOf(name: string): number {
  return Number(name.slice(1));
}

/** A small seeded PRNG (mulberry32): the same files give the same verdicts every time. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resample statistics of one side: `stats[figure][i]` is resample i's value. */
function resampleStats(units: Units, figures: string[], random: () => number): Record<string, Float64Array> {
  const out: Record<string, Float64Array> = {};
  for (const f of figures) out[f] = new Float64Array(RESAMPLES);
  if (units.kind === 'rounds') throw new Error('rounds are compared by Welch\'s t, not resampled');
  // The blocks' buckets on one compact index (the union of their buckets), so a resample adds into a small array.
  const blocks = units.blocks;
  const slots = [...new Set(blocks.flatMap((b) => b.buckets.map(([v]) => countsIndex(v))))].sort((x, y) => x - y);
  const slotOf = new Map(slots.map((s, i) => [s, i]));
  const highest = slots.map((s) => valueFromIndex(s + 1) - 1);
  const compact = blocks.map((b) => b.buckets.map(([v, c]) => [slotOf.get(countsIndex(v))!, c] as const));
  const counts = new Float64Array(slots.length);
  const latency = figures.filter((f) => f !== 'ops').map((f) => ({ f, p: percentileOf(f) }));
  for (let i = 0; i < RESAMPLES; i++) {
    counts.fill(0);
    let requests = 0;
    let seconds = 0;
    let total = 0;
    for (let k = 0; k < blocks.length; k++) {
      const pick = Math.floor(random() * blocks.length);
      requests += blocks[pick].requests;
      seconds += blocks[pick].durationSec;
      for (const [slot, c] of compact[pick]) counts[slot] += c;
    }
    for (let s = 0; s < counts.length; s++) total += counts[s];
    if (out.ops) out.ops[i] = seconds > 0 ? requests / seconds : 0;
    for (const { f, p } of latency) {
      const target = Math.max(1, Math.floor((p / 100) * total + 0.5));
      let seen = 0;
      let value = 0;
      for (let s = 0; s < counts.length; s++) {
        seen += counts[s];
        if (seen >= target) {
          value = highest[s];
          break;
        }
      }
      out[f][i] = total > 0 ? value / 1000 : 0;
    }
  }
  return out;
}

export interface NoiseInterval {
  /** The 95% interval of NEW/BASE, as ratios (1 = the same). */
  low: number;
  high: number;
}

/** Units each side has (intervals or rounds). */
export function unitCount(u: Units): number {
  return u.kind === 'rounds' ? u.values.length : u.blocks.length;
}

/** Student's t at 97.5% (a two-sided 95% interval) for `df` degrees of freedom. */
function t975(df: number): number {
  const table: [number, number][] = [[1, 12.706], [2, 4.303], [3, 3.182], [4, 2.776], [5, 2.571], [6, 2.447], [7, 2.365], [8, 2.306], [9, 2.262], [10, 2.228], [12, 2.179], [15, 2.131], [20, 2.086], [30, 2.042], [60, 2.0], [120, 1.98]];
  if (df <= 1) return table[0][1];
  for (let i = 1; i < table.length; i++) {
    const [d, t] = table[i];
    if (df <= d) {
      const [d0, t0] = table[i - 1];
      return t0 + ((t - t0) * (df - d0)) / (d - d0);
    }
  }
  return 1.96;
}

/** Welch's interval of NEW/BASE from two sets of rounds' values of one figure; null when BASE's mean is 0. */
function welchInterval(base: number[], next: number[]): NoiseInterval | null {
  const stats = (xs: number[]) => {
    const mean = xs.reduce((s, v) => s + v, 0) / xs.length;
    return { mean, variance: xs.reduce((s, v) => s + (v - mean) ** 2, 0) / (xs.length - 1), n: xs.length };
  };
  const b = stats(base);
  const n = stats(next);
  if (b.mean === 0) return null;
  const vb = b.variance / b.n;
  const vn = n.variance / n.n;
  const se = Math.sqrt(vb + vn);
  // Welch–Satterthwaite degrees of freedom (rounds that agree exactly: no spread, the interval is the point).
  const df = se === 0 ? Infinity : (vb + vn) ** 2 / ((vb * vb) / (b.n - 1) + (vn * vn) / (n.n - 1));
  const half = t975(df) * se;
  const diff = n.mean - b.mean;
  // A ratio is never below 0, however wide the spread.
  return { low: Math.max(0, 1 + (diff - half) / b.mean), high: 1 + (diff + half) / b.mean };
}

/** The 95% interval of NEW/BASE per figure; null for all when either side has too few units. */
export function ratioIntervals(base: Units, next: Units, figures: string[]): Record<string, NoiseInterval> | null {
  if (unitCount(base) < MIN_UNITS || unitCount(next) < MIN_UNITS) return null;
  if (base.kind === 'rounds' && next.kind === 'rounds') {
    const out: Record<string, NoiseInterval> = {};
    for (const f of figures) {
      const interval = welchInterval(base.values.map((v) => v[f] ?? 0), next.values.map((v) => v[f] ?? 0));
      if (interval) out[f] = interval;
    }
    return out;
  }
  const random = prng(0x5eed);
  const b = resampleStats(base, figures, random);
  const n = resampleStats(next, figures, random);
  const out: Record<string, NoiseInterval> = {};
  for (const f of figures) {
    const ratios = Array.from({ length: RESAMPLES }, (_, i) => (b[f][i] > 0 ? n[f][i] / b[f][i] : NaN)).filter((r) => Number.isFinite(r)).sort((x, y) => x - y);
    if (ratios.length === 0) continue;
    const tail = (1 - CONFIDENCE) / 2;
    out[f] = { low: ratios[Math.floor(tail * (ratios.length - 1))], high: ratios[Math.ceil((1 - tail) * (ratios.length - 1))] };
  }
  return out;
}
