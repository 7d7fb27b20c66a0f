/**
 * The result's file form (issue 22 Deliver 3, issue 20 item 13): compact
 * JSON, histograms as HdrHistogram V2 base64 that decode back to the same
 * buckets, files of the previous form (bucket lists) still read, and the
 * per-interval histograms bounded however fine --interval is.
 */
import { describe, expect, it } from 'vitest';
import { LatencyHistogram, type HistogramData } from '../src/engine-js/histogram.js';
import type { RawInterval } from '../src/engine-js/plan.js';
import { decodeHistogram, decodeHistograms, encodeHistogram, resultJsonText } from '../src/result-json.js';
import { finishResult } from '../src/run.js';
import { coarsenIntervals, INTERVAL_HISTOGRAMS_BOUND } from '../src/series.js';
import { UsageError } from '../src/usage-error.js';
import { planOf, rawResult } from './fixtures.js';

/** A histogram of `n` latencies spread like a real run's (log-normal-ish around 200 us, a tail to 50 ms). */
function spread(n: number, seed = 1): HistogramData {
  const h = new LatencyHistogram();
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const u = x / 2 ** 31;
    h.record(Math.round(200_000 * Math.exp(3 * (u - 0.5) ** 3 * 8)));
  }
  return h.toData();
}

function interval(index: number, h: HistogramData, everyNs = 10_000_000): RawInterval {
  const n = h.buckets.reduce((s, [, c]) => s + c, 0);
  const empty: HistogramData = { unit: 'ns', significantDigits: 3, buckets: [] };
  return { index, startNs: index * everyNs, endNs: (index + 1) * everyNs, requests: n, sets: n, gets: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: h, getHistogram: empty, connections: 4 };
}

describe('histograms in the file form', () => {
  it('encode as V2 base64 and decode to the same buckets, values up to the top of the range', () => {
    const h = spread(20_000);
    h.buckets.push([2 ** 39, 3]);
    const text = encodeHistogram(h);
    expect(text).toMatch(/^HISTF[A-Za-z0-9+/=]+$/);
    expect(decodeHistogram(text, 'x')).toEqual(h);
    // Smaller than the bucket list it stands for, compact as that is.
    expect(text.length).toBeLessThan(JSON.stringify(h.buckets).length / 2);
  });

  it('a result file reads back equal, in either form: V2 base64 (now) or bucket lists (results written before)', () => {
    const r = finishResult(planOf(['--mode', 'mixed']), rawResult({ histogram: spread(1000), setHistogram: spread(500, 2), getHistogram: spread(500, 3), intervals: [interval(0, spread(300))], commandHistograms: [spread(10, 4), spread(20, 5)] }));
    const expected = JSON.parse(JSON.stringify(r));
    const now = JSON.parse(resultJsonText(r));
    expect(typeof now.histogram).toBe('string');
    expect(typeof now.intervals[0].setHistogram).toBe('string');
    expect(typeof now.commandHistograms[1]).toBe('string');
    expect(decodeHistograms(now, 'new.json')).toEqual(expected);
    const before = JSON.parse(JSON.stringify(r, null, 2));
    expect(decodeHistograms(before, 'old.json')).toEqual(expected);
  });

  it('a histogram field that is neither form is refused naming the file and the field', () => {
    expect(() => decodeHistograms({ histogram: 'not base64' }, 'bad.json')).toThrow(UsageError);
    expect(() => decodeHistograms({ perCommand: [], intervals: [{ setHistogram: 'HISTFAAAbroken' }] }, 'bad.json')).toThrow(/bad\.json: intervals\[0\]\.setHistogram/);
  });
});

describe('the per-interval histograms of a long series are bounded', () => {
  it(`at most ${INTERVAL_HISTOGRAMS_BOUND} records, k intervals added into one, every count kept`, () => {
    const n = 2 * INTERVAL_HISTOGRAMS_BOUND + 500;
    const hs = [spread(50, 7), spread(50, 8)];
    const intervals = Array.from({ length: n }, (_, i) => interval(i, hs[i % 2]));
    const coarse = coarsenIntervals(intervals);
    expect(coarse.length).toBeLessThanOrEqual(INTERVAL_HISTOGRAMS_BOUND);
    expect(coarse.length).toBe(Math.ceil(n / 3));
    expect(coarse.reduce((s, i) => s + i.requests, 0)).toBe(intervals.reduce((s, i) => s + i.requests, 0));
    expect(coarse[1]).toMatchObject({ index: 1, startNs: 3 * 10_000_000, endNs: 6 * 10_000_000, connections: 4 });
    const total = (list: RawInterval[]) => list.reduce((s, i) => s + i.setHistogram.buckets.reduce((t, [, c]) => t + c, 0), 0);
    expect(total(coarse)).toBe(total(intervals));
    expect(coarsenIntervals(intervals.slice(0, 10))).toEqual(intervals.slice(0, 10));
  });

  it('the series keeps every interval while the result file holds the bounded histograms, and stays small', () => {
    const n = 6000; // --duration 60s --interval 10ms
    const plan = planOf(['--mode', 'set', '--duration', '60s']);
    const hs = [spread(300, 7), spread(300, 8)];
    const intervals = Array.from({ length: n }, (_, i) => interval(i, hs[i % 2]));
    const started = performance.now();
    const r = finishResult(plan, rawResult({ histogram: spread(1000), setHistogram: spread(1000), getHistogram: { unit: 'ns', significantDigits: 3, buckets: [] }, intervals, startedUnixMs: 1_700_000_000_000 }));
    const text = resultJsonText(r);
    const ms = performance.now() - started;
    expect(r.series).toHaveLength(n);
    expect(r.intervals).toHaveLength(INTERVAL_HISTOGRAMS_BOUND);
    // The old form wrote 180 MB for such a run; docs/results.md states this cost (about 350 B an interval beyond the bounded histograms).
    expect(text.length).toBeLessThan(3_500_000);
    console.log(`6000 intervals of 10 ms: ${text.length} bytes, ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(10_000);
  }, 20_000);
});
