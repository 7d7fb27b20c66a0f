/**
 * The contract both engines take and give back. A Plan is plain JSON: the
 * native engine receives it through napi unchanged, and a study records it.
 * RunResult field names are stable: scripts read them from `--json`.
 */
import type { HistogramData, LatencySummary } from './histogram.js';
import type { KeyPattern } from './workload.js';

export type Mode = 'set' | 'get' | 'mixed';
export type EngineName = 'js' | 'native';

export interface Plan {
  host: string;
  port: number;
  /** Connections, each with its own key stream and share of the requests. */
  connections: number;
  /** Requests in flight per connection (a sliding window). */
  pipeline: number;
  /** Total timed requests across all connections. */
  requests: number;
  mode: Mode;
  keyspace: number;
  /** How key indexes are drawn: uniform | sequential | gaussian | zipf. */
  keyPattern: KeyPattern;
  /** gaussian: standard deviation in keys; null = keyspace / 6. */
  keyStddev: number | null;
  /** zipf: exponent s, > 0. */
  zipfExponent: number;
  valueSizeMin: number;
  valueSizeMax: number;
  /** Mixed mode: percentage of writes, 0..100. */
  setRatio: number;
  /** A bare command name or a template with __key__/__data__/__rand_int__. */
  setCmd: string;
  getCmd: string;
  keyPrefix: string;
  /**
   * True for the command suite's own commands (-t): a single word such as
   * PING is sent as it is, and a template needs no __key__. False for
   * --set-cmd/--get-cmd, where a bare name means the kvstore shape.
   */
  literalCommands: boolean;
  /** Unsigned 32-bit seed. */
  seed: number;
  verifyGet: boolean;
  /** Get mode: write the keys it will read first (untimed). */
  preload: boolean;
  /** Native engine worker threads. */
  threads: number;
  /** Per-request reply timeout in ms; 0 disables it. */
  timeoutMs: number;
  /** Measured phase length in ms instead of a request count; 0 = count-bound. */
  durationMs: number;
  /** Untimed phase before the measured one, in ms; 0 = none. */
  warmupMs: number;
  /** Open loop: total requests per second on a schedule; 0 = as fast as replies allow. */
  rate: number;
}

/** Why a run ended early. */
export type FailureKind = 'connect' | 'closed' | 'protocol' | 'timeout' | 'interrupted' | 'preload' | 'internal';

export interface Failure {
  kind: FailureKind;
  message: string;
}

/** What an engine measured: counters and the histogram, nothing derived. */
export interface RawResult {
  engine: EngineName;
  /** Timed requests that got a reply. */
  requests: number;
  sets: number;
  gets: number;
  /** Replies that were not errors (misses and mismatches included). */
  ok: number;
  errors: number;
  /** Reads answered with nil. */
  misses: number;
  /** Reads whose value differed from the one derived from the key. */
  mismatches: number;
  bytesOut: number;
  bytesIn: number;
  elapsedNs: number;
  histogram: HistogramData;
  preloadRequests: number;
  preloadElapsedNs: number;
  /** Requests sent and answered during --warmup, in no figure (absent = 0). */
  warmupRequests?: number;
  warmupElapsedNs?: number;
  /** --rate: latency from the actual send (the main histogram counts from the intended send). */
  serviceHistogram?: HistogramData | null;
  /** Text of the first error reply, if any. */
  firstError: string | null;
  /** Text of the first mismatching value, escaped, if any. */
  firstMismatch: string | null;
  failure: Failure | null;
}

export interface RunResult extends RawResult {
  target: { host: string; port: number };
  workload: Plan;
  elapsedSec: number;
  opsPerSec: number;
  /** elapsed / requests: the seed tool's "avg us/op" (inverse throughput). */
  avgUsPerOp: number;
  /** Per-request latency, reply parsed − request written. */
  latencyUs: LatencySummary;
  preloadElapsedSec: number;
  /** --rate: percentiles of the service time (reply − actual send). */
  serviceUs: LatencySummary | null;
  /** --rate: false when the achieved rate is more than 2% off the asked one. */
  rateKept: boolean | null;
  /** True when every planned request got its reply. */
  complete: boolean;
}

export interface Progress {
  /** Timed requests answered so far. */
  done: number;
  total: number;
  errors: number;
  elapsedNs: number;
  phase: 'preload' | 'warmup' | 'run';
  /** Duration-bound phases: their length, for a time-based done %. */
  durationNs?: number;
}

export interface RunOptions {
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
}

export interface Engine {
  name: EngineName;
  run(plan: Plan, options?: RunOptions): Promise<RawResult>;
}
