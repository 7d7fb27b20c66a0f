/**
 * What whoever runs the engine may watch or set while a run goes on: a
 * progress snapshot handed to `onProgress`, and an AbortSignal that stops
 * the run. Both engines report the same ProgressSnapshot. Paired with
 * crates/respbench-core/src/progress.rs.
 */

import type { HistogramData } from './histogram.js';

/** The time series' interval unless RunOptions.intervalMs says otherwise. */
export const DEFAULT_INTERVAL_MS = 1000;

/** The phases of a run, in order; preload and warmup are untimed. */
export type Phase = 'preload' | 'warmup' | 'run';

export interface ProgressSnapshot {
  /** Replies in the current phase so far. */
  done: number;
  /** Requests planned for the phase; 0 when time bounds it. */
  total: number;
  errors: number;
  elapsedNs: number;
  phase: Phase;
  /** Duration-bound phases: their length, for a time-based done %. */
  durationNs?: number;
  /** The timed phase: p99 latency so far in ns (absent in untimed phases or before any reply). */
  p99Ns?: number;
}

export interface RunOptions {
  onProgress?: (p: ProgressSnapshot) => void;
  /** The time series' interval in ms (default DEFAULT_INTERVAL_MS). */
  intervalMs?: number;
  /** Each interval of the measured phase once it has ended (every connection's counts added). */
  onInterval?: (i: RawInterval) => void;
  /** Aborting ends the run with an `interrupted` failure and the counters so far. */
  signal?: AbortSignal;
}

/**
 * What the measured phase counted in one interval of its time series: the
 * replies that came in it, and their latencies per op kind. Paired with
 * IntervalRecord in crates/respbench-core/src/plan.rs.
 */
export interface RawInterval {
  /** 0 for the first interval. */
  index: number;
  /** From the phase start, ns. */
  startNs: number;
  /** From the phase start, ns: startNs + the interval, or earlier for the last one. */
  endNs: number;
  requests: number;
  sets: number;
  gets: number;
  errors: number;
  misses: number;
  mismatches: number;
  lostWrites: number;
  setHistogram: HistogramData;
  getHistogram: HistogramData;
  /** A command mix: each command's latencies in the interval, in the mix's order. Absent otherwise. */
  commandHistograms?: HistogramData[];
  /** Connections open at the interval's end (all of them but under --ramp-connections); absent in older results. */
  connections?: number;
  /** Bytes written to and read from the server in the interval (Counters' bytesOut/bytesIn); absent in older results. */
  bytesOut?: number;
  bytesIn?: number;
  /** --reconnect: requests written on a connection that dropped before their replies came, in the interval; absent in older results. */
  lost?: number;
}
