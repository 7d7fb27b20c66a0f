/**
 * An interval's histograms are packed when cut (engine-js/packed-histogram.ts,
 * the native engine's crates/respbench-core/src/packed.rs): every bucket a
 * cut interval had comes back when decoded, sums add as the buckets do, the
 * form is the one the native engine hands over, a long series of cut
 * intervals holds a few bytes a bucket, not a JS array each, and a cut is
 * read across event-loop turns, not in the one that ends the interval.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { addBuckets } from '../src/buckets.js';
import { newCounters } from '../src/engine-js/counters.js';
import { countsIndex, HIGHEST_TRACKABLE_NS, LatencyHistogram, OpHistograms, valueFromIndex } from '../src/engine-js/histogram.js';
import { PackedHistogram } from '../src/engine-js/packed-histogram.js';
import type { RawInterval } from '../src/engine-js/plan.js';
import { IntervalClock } from '../src/engine-js/tally.js';

/** A recording as a run makes one: latencies over six orders of magnitude, uneven counts, the top of the range. */
function record(into: LatencyHistogram, seed: number, n = 20_000): void {
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    into.record(((x % 1000) + 1) * 2 ** (x >>> 28));
  }
  into.record(0);
  into.record(HIGHEST_TRACKABLE_NS - 1);
}

/** One interval cut by the clock a run uses, from a recording made into its current histograms. */
function cutOnce(current: OpHistograms): IntervalClock {
  const clock = new IntervalClock(current.emptyLike(), 60_000, performance.now(), newCounters(), current, undefined, () => 1);
  clock.finish(performance.now());
  return clock;
}

describe('a packed interval histogram', () => {
  it('decodes to every bucket the cut interval recorded', () => {
    for (let seed = 0; seed < 6; seed++) {
      const current = new OpHistograms();
      record(current.byCommand[0], seed);
      record(current.byCommand[1], seed + 100, 500);
      const set = current.byCommand[0].toData().buckets;
      const get = current.byCommand[1].toData().buckets;
      const [cut] = cutOnce(current).intervals;
      expect(cut.setHistogram.buckets).toEqual(set);
      expect(cut.getHistogram.buckets).toEqual(get);
      // The result file's form (and JSON.stringify) sees the buckets, not the packing.
      expect(JSON.parse(JSON.stringify(cut.setHistogram))).toEqual({ unit: 'ns', significantDigits: 3, buckets: set });
    }
  });

  it('adds as the bucket lists do', () => {
    const a = new LatencyHistogram();
    const b = new LatencyHistogram();
    record(a, 1);
    record(b, 2);
    expect(PackedHistogram.add(PackedHistogram.of(a), b.toData()).buckets).toEqual(addBuckets(a.toData().buckets, b.toData().buckets));
    expect(PackedHistogram.add(PackedHistogram.of(new LatencyHistogram()), a.toData()).buckets).toEqual(a.toData().buckets);
  });

  it("decodes the native engine's packing (the text packed.rs pins) to its buckets", () => {
    const native = '\x00\x01\x00\x40\x01\x7d\x1f\x05\x00\x01\x77\x56\x02\x7f\x3f\x46\x79\x04\x40\x40\x40\x40\x40\x40\x10';
    const buckets: [number, number][] = [[0, 1], [1, 64], [2047, 5], [2048, 1], [1_499_136, 4095], [HIGHEST_TRACKABLE_NS - 2 ** 29, 2 ** 40]];
    expect(new PackedHistogram(native).buckets).toEqual(buckets);
    expect(PackedHistogram.fromData({ unit: 'ns', significantDigits: 3, buckets }).packed).toBe(native);
  });

  it('keeps a long series of cut intervals at a few bytes a bucket', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const current = new OpHistograms();
    record(current.byCommand[0], 7);
    const buckets = current.byCommand[0].toData().buckets.length;
    expect(buckets).toBeGreaterThan(1000);
    const kept: IntervalClock[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    // Each clock cuts the same recording once (finish puts it back in `current`).
    for (let i = 0; i < 400; i++) kept.push(cutOnce(current));
    gc();
    const perInterval = (process.memoryUsage().heapUsed - before) / kept.length;
    // As [value, count] arrays an interval held ~64 bytes a bucket (over 60 KB here).
    expect(perInterval).toBeLessThan(4 * buckets + 1024);
    expect(kept.every((c) => c.intervals.length === 1)).toBe(true);
  });

  it('is not cut before its end when the turn that set its timer ran long (timers count from the loop time read at the turn start)', async () => {
    const current = new OpHistograms([0]);
    // A turn busy for 15 ms: libuv's loop time, which the timer is set from, is that old.
    const busyUntil = performance.now() + 15;
    while (performance.now() < busyUntil);
    const handed: RawInterval[] = [];
    const clock = new IntervalClock(current.emptyLike(), 10, performance.now(), newCounters(), current, (i) => handed.push(i), () => 1);
    try {
      await vi.waitFor(() => expect(handed.length).toBeGreaterThan(0), { timeout: 2000, interval: 2 });
      expect(handed[0].endNs).toBe(10e6);
    } finally {
      clock.finish(performance.now());
    }
  });

  it('is cut across event-loop turns while recording goes on into the next interval', () => {
    // Under --rate a cut read in one turn held requests due then (9–14 ms at the first cut).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate', 'performance'] });
    try {
      // A mix: one write command, two reads (the read side's histogram is their sum).
      const current = new OpHistograms([0, 1, 1]);
      record(current.byCommand[0], 1);
      record(current.byCommand[1], 2, 500);
      record(current.byCommand[2], 3, 300);
      const want = current.byCommand.map((h) => h.toData().buckets);
      const handed: RawInterval[] = [];
      const clock = new IntervalClock(current.emptyLike(), 1000, performance.now(), newCounters(), current, (i) => handed.push(i), () => 1, true);
      // The boundary: the turn of the cut's timer reads no counts, so nothing is handed on yet.
      vi.advanceTimersToNextTimer();
      expect(clock.intervals).toHaveLength(0);
      // Recorded after the boundary: the next interval's, though the cut is not read yet.
      const late = 123_456_789;
      current.byCommand[0].record(late);
      let turns = 0;
      while (clock.intervals.length === 0 && turns < 1000) {
        vi.advanceTimersToNextTimer();
        turns++;
      }
      expect(turns).toBeGreaterThan(1);
      const [cut] = clock.intervals;
      expect(handed).toEqual([cut]);
      expect(cut.setHistogram.buckets).toEqual(want[0]);
      expect(cut.getHistogram.buckets).toEqual(addBuckets(want[1], want[2]));
      expect(cut.commandHistograms!.map((h) => h.buckets)).toEqual(want);
      clock.finish(performance.now());
      expect(clock.intervals[1].setHistogram.buckets).toEqual([[valueFromIndex(countsIndex(late)), 1]]);
      expect(clock.intervals[1].getHistogram.buckets).toEqual([]);
      // The whole phase back in `current`.
      expect(current.byCommand.map((h) => h.total)).toEqual([20_003, 502, 302]);
    } finally {
      vi.useRealTimers();
    }
  });
});
