/**
 * The latency figures of a result (percentiles, max, mean) are read off the
 * histogram's sparse bucket list: the same numbers the dense HdrHistogram
 * layout gives, without building a 32,768-count histogram per figure set
 * (that was a few milliseconds of CPU per row at the end of every run).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import { percentilesUsOf, summaryUs } from '../src/run.js';

const us = (ns: number) => Math.round(ns) / 1000;

/** The figures as the dense histogram works them out. */
function denseSummary(h: LatencyHistogram) {
  return {
    p50: us(h.valueAtPercentile(50)),
    p90: us(h.valueAtPercentile(90)),
    p99: us(h.valueAtPercentile(99)),
    p999: us(h.valueAtPercentile(99.9)),
    max: us(h.max()),
    mean: Math.round(h.mean()) / 1000,
  };
}

/** Latencies from 1 ns to minutes, with repeats (several values per bucket). */
const latencies = fc.array(fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 50_000_000 }), fc.integer({ min: 0, max: 2 ** 37 })), { maxLength: 300 });

describe('latency figures', () => {
  afterEach(() => vi.restoreAllMocks());

  it('equal those of the dense histogram, for any recorded latencies', () => {
    fc.assert(
      fc.property(latencies, fc.array(fc.double({ min: 0, max: 100, noNaN: true }), { maxLength: 6 }), (values, percentiles) => {
        const h = new LatencyHistogram();
        for (const v of values) h.record(v);
        const data = h.toData();
        expect(summaryUs(data)).toEqual(denseSummary(h));
        const dense: Record<string, number> = {};
        for (const p of percentiles) dense[`p${p}`] = us(h.valueAtPercentile(p));
        expect(percentilesUsOf(data, percentiles)).toEqual(dense);
      }),
      { numRuns: 300 },
    );
  });

  it('build no dense histogram', () => {
    const h = new LatencyHistogram();
    for (let v = 1; v < 1e7; v *= 1.3) h.record(v);
    const fromData = vi.spyOn(LatencyHistogram, 'fromData');
    summaryUs(h.toData());
    percentilesUsOf(h.toData(), [50, 99, 99.99]);
    expect(fromData).not.toHaveBeenCalled();
  });
});
