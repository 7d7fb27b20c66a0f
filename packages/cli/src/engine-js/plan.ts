/**
 * The contract both engines take and give back: an Engine runs a Plan and
 * returns a RawResult, or a Failure inside it. A Plan is plain JSON: the
 * native engine receives it through napi unchanged, and a study records it.
 * RawResult's field names are part of `--json` (the CLI's RunResult, in
 * ../run.ts, extends it): they stay stable. Paired with
 * crates/respbench-core/src/plan.rs.
 */
import type { Counters } from './counters.js';
import type { HistogramData } from './histogram.js';
import type { KeyPattern } from './keys.js';
import type { RunOptions } from './progress.js';

export type Mode = 'set' | 'get' | 'mixed';
export type EngineName = 'js' | 'native';

export interface Plan {
  host: string;
  port: number;
  /** Unix socket path; when set, host and port are not used. */
  socket: string | null;
  /** TLS over the TCP connection; null = plain TCP. */
  tls: TlsPlan | null;
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

/** TLS settings (--tls and the flags after it); file paths as given. */
export interface TlsPlan {
  /** PEM file of CAs trusted besides the system's roots. */
  cacert: string | null;
  /** Folder of PEM CA files trusted besides the system's roots. */
  cacertdir: string | null;
  /** Client certificate (PEM), with `key`. */
  cert: string | null;
  key: string | null;
  /** Skip verifying the server's certificate. */
  insecure: boolean;
  /** Server name sent and checked instead of the host. */
  sni: string | null;
  /** TLS 1.2 ciphers, OpenSSL names separated by ':'. */
  ciphers: string | null;
  /** TLS 1.3 suites, names separated by ':'. */
  ciphersuites: string | null;
}

/** Why a run ended early. */
export type FailureKind = 'connect' | 'closed' | 'protocol' | 'timeout' | 'interrupted' | 'preload' | 'internal';

export interface Failure {
  kind: FailureKind;
  message: string;
}

/** What an engine measured: counters and the histogram, nothing derived. */
export interface RawResult extends Counters {
  engine: EngineName;
  elapsedNs: number;
  histogram: HistogramData;
  preloadRequests: number;
  preloadElapsedNs: number;
  /** Requests sent and answered during --warmup, in no figure (absent = 0). */
  warmupRequests?: number;
  warmupElapsedNs?: number;
  /** --rate: latency from the actual send (the main histogram counts from the intended send). */
  serviceHistogram?: HistogramData | null;
  failure: Failure | null;
}

/** What both engines implement: the JS engine (./index.ts) and the native one (../engine-native.ts). */
export interface Engine {
  name: EngineName;
  run(plan: Plan, options?: RunOptions): Promise<RawResult>;
}
