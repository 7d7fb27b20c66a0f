/**
 * The time series' raw intervals (engine-js/plan.ts RawInterval), added up:
 * the native engine's per-thread records of one interval, and a last
 * interval too short to stand alone folded into the one before it.
 */
import { PackedHistogram } from './engine-js/packed-histogram.js';
import type { RawInterval } from './engine-js/plan.js';

/** Sums stay packed: a long series' added-up intervals cost what its cut ones do. */
const add = PackedHistogram.add;

/** Two records of one interval added up (two threads', or a short last one folded into the one before). */
export function addIntervals(a: RawInterval, b: RawInterval): RawInterval {
  return {
    index: a.index,
    startNs: Math.min(a.startNs, b.startNs),
    endNs: Math.max(a.endNs, b.endNs),
    requests: a.requests + b.requests,
    sets: a.sets + b.sets,
    gets: a.gets + b.gets,
    errors: a.errors + b.errors,
    misses: a.misses + b.misses,
    mismatches: a.mismatches + b.mismatches,
    lostWrites: a.lostWrites + b.lostWrites,
    setHistogram: add(a.setHistogram, b.setHistogram),
    getHistogram: add(a.getHistogram, b.getHistogram),
    // A command mix: each command's, in the mix's order.
    ...(a.commandHistograms && b.commandHistograms ? { commandHistograms: a.commandHistograms.map((h, k) => add(h, b.commandHistograms![k])) } : {}),
    ...(a.connections !== undefined || b.connections !== undefined ? { connections: (a.connections ?? 0) + (b.connections ?? 0) } : {}),
    ...optionalSum(a, b, 'bytesOut'),
    ...optionalSum(a, b, 'bytesIn'),
    ...optionalSum(a, b, 'lost'),
  };
}

/** A field older results lack: summed where either record has it, absent where neither does. */
function optionalSum(a: RawInterval, b: RawInterval, field: 'bytesOut' | 'bytesIn' | 'lost'): Partial<RawInterval> {
  return a[field] !== undefined || b[field] !== undefined ? { [field]: (a[field] ?? 0) + (b[field] ?? 0) } : {};
}

/** A last interval shorter than this share of the interval is folded into the one before (the replies still in flight at the end). */
export const SHORT_TAIL_SHARE = 0.1;

/** The intervals as the series shows them: a short last one folded into the one before. */
export function foldShortTail(intervals: RawInterval[]): RawInterval[] {
  if (intervals.length < 2) return intervals;
  const first = intervals[0];
  const every = first.endNs - first.startNs;
  const last = intervals[intervals.length - 1];
  if (every <= 0 || last.endNs - last.startNs >= every * SHORT_TAIL_SHARE) return intervals;
  const before = intervals[intervals.length - 2];
  // Connections open at the end: the last record's count, not a sum.
  const connections = last.connections !== undefined ? { connections: last.connections } : {};
  return [...intervals.slice(0, -2), { ...addIntervals(before, last), index: before.index, ...connections }];
}

/**
 * Most intervals whose histograms a result keeps. A longer series keeps
 * every interval's counters and p50/p99/max (RunResult.series), but its
 * per-interval histograms (RunResult.intervals, what merge and --hdr-log
 * read) are added up k at a time, k = ceil(intervals / bound), so a result
 * file holds at most this many of them however fine --interval is.
 */
export const INTERVAL_HISTOGRAMS_BOUND = 1000;

/** The intervals with at most `bound` records: consecutive groups of k added into one (index = the group's). */
export function coarsenIntervals(intervals: RawInterval[], bound = INTERVAL_HISTOGRAMS_BOUND): RawInterval[] {
  if (intervals.length <= bound) return intervals;
  const k = Math.ceil(intervals.length / bound);
  const out: RawInterval[] = [];
  for (let g = 0; g * k < intervals.length; g++) {
    const group = intervals.slice(g * k, (g + 1) * k);
    let sum = group[0];
    for (const i of group.slice(1)) sum = addIntervals(sum, i);
    // Connections open at the group's end: its last record's count, not a sum.
    const last = group[group.length - 1];
    out.push({ ...sum, index: g, ...(last.connections !== undefined ? { connections: last.connections } : {}) });
  }
  return out;
}
