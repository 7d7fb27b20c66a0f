/**
 * The V2 compressed base64 a result file holds is written by respbench's own
 * encoder (result-json.ts), not by hdr-histogram-js (whose loading cost every
 * --json run tens of ms): it must be the very text that library writes for
 * the same histogram, so HdrHistogram's tools, older respbench readers and
 * the library's decoder read it as before.
 */
import { createRequire } from 'node:module';
import fc from 'fast-check';
import type HdrLib from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { HIGHEST_TRACKABLE_NS, LatencyHistogram, type HistogramData } from '../src/engine-js/histogram.js';
import { encodeHistogram } from '../src/result-json.js';

const hdr = createRequire(import.meta.url)('hdr-histogram-js') as typeof HdrLib;

/** The library's encoding of `data`, as result-json.ts made it before. */
function libraryEncoding(data: HistogramData): string {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 3, bitBucketSize: 64, autoResize: false, useWebAssembly: false });
  for (const [value, count] of data.buckets) if (count > 0) h.recordValueWithCount(value, count);
  return hdr.encodeIntoCompressedBase64(h);
}

/** Latencies from 0 to the top of the range, with repeats, and counts up to the billions (multi-byte words). */
const recorded = fc.array(fc.tuple(fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 80_000_000 }), fc.integer({ min: 0, max: HIGHEST_TRACKABLE_NS - 1 })), fc.integer({ min: 1, max: 5_000_000_000 })), { maxLength: 200 });

describe('HdrHistogram V2 encoding', () => {
  it('is the text hdr-histogram-js writes, for any histogram (the empty one too)', () => {
    fc.assert(
      fc.property(recorded, (values) => {
        const h = new LatencyHistogram();
        for (const [v, c] of values) h.recordCount(v, c);
        const data = h.toData();
        expect(encodeHistogram(data)).toBe(libraryEncoding(data));
      }),
      { numRuns: 300 },
    );
    expect(encodeHistogram({ unit: 'ns', significantDigits: 3, buckets: [] })).toBe(libraryEncoding({ unit: 'ns', significantDigits: 3, buckets: [] }));
  });
});
