/**
 * What whoever runs the engine may watch or set while a run goes on: a
 * progress snapshot handed to `onProgress`, and an AbortSignal that stops
 * the run. Both engines report the same ProgressSnapshot. Paired with
 * crates/respbench-core/src/progress.rs.
 */

import type { RawInterval } from './plan.js';

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
