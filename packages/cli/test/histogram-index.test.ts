/**
 * The latency histogram's bucket index (countsIndex) is HdrHistogram's for
 * the same bounds (1 ns .. 2^40 ns, 3 significant digits): every value lands
 * in the bucket whose lowest equivalent value hdr-histogram-js names, on
 * both sides of the 32-bit boundary the fast path stops at. Histograms of
 * both engines and of several machines merge by adding counts only if this
 * holds.
 */
import { build, type JsHistogram } from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { countsIndex, HIGHEST_TRACKABLE_NS, valueFromIndex } from '../src/engine-js/histogram.js';

describe('the histogram bucket of a value', () => {
  const reference = build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_TRACKABLE_NS, numberOfSignificantValueDigits: 3, useWebAssembly: false }) as JsHistogram; // without WebAssembly, build gives the JS histogram

  it("is HdrHistogram's, at every power of two and its neighbours, and for values spread over the range", () => {
    const values: number[] = [0];
    for (let p = 0; p < 40; p++) for (const d of [-1, 0, 1]) if (2 ** p + d >= 0) values.push(2 ** p + d);
    // A fixed spread (no randomness): a few thousand values per power of two of magnitude.
    for (let p = 0; p < 40; p++) for (let k = 0; k < 2000; k++) values.push(Math.floor(2 ** p * (1 + (k * 0.618034) % 1)));
    const wrong = values.filter((v) => v < HIGHEST_TRACKABLE_NS && valueFromIndex(countsIndex(v)) !== reference.lowestEquivalentValue(v));
    expect(wrong).toEqual([]);
  });
});
