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
import type { RawInterval, RunOptions } from './progress.js';

export type { RawInterval };

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
  /**
   * --pipeline-mode: `window` (absent) keeps up to `pipeline` requests in
   * flight, one going out as each reply comes; `batch` sends `pipeline`,
   * waits for all their replies, then sends the next `pipeline`
   * (redis-benchmark's -P).
   */
  pipelineMode?: 'batch';
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
  /**
   * --value-generation: mixed into every value (absent or 0: the values of
   * builds before it), so a server that keeps an older value is caught
   * (docs/workload.md, "Values").
   */
  valueGeneration?: number;
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
  /**
   * True: `__rand_int__` is sent as the text `__rand_int__`, as
   * redis-benchmark does without -r (every request then names the same key,
   * e.g. `key:__rand_int__`). Absent or false: each occurrence is a fresh
   * 12-digit draw from [0, keyspace).
   */
  randIntLiteral?: boolean;
  /**
   * True: the commands go in the inline form (`PING\r\n`), as
   * redis-benchmark's PING_INLINE; fixed words only. Absent or false: RESP arrays.
   */
  inlineCommands?: boolean;
  /**
   * A weighted command mix (--command/--weight/--command-key-pattern, a
   * study's `commands:`): each request is one of these, drawn by weight from
   * the connection's key stream (docs/workload.md, "Command mixes"). Absent
   * or null: the two commands of `mode` (setCmd/getCmd), as before.
   */
  commands?: CommandSpec[] | null;
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
  /** ACL user for AUTH (null: the default user). */
  user: string | null;
  /** AUTH password, a secret: never printed (--json shows "***"); null = no AUTH. */
  password: string | null;
  /** SELECT this database after connecting; null = no SELECT (database 0). */
  dbnum: number | null;
  /** Speak RESP3 (HELLO 3) instead of RESP2. */
  resp3: boolean;
  /**
   * Several load machines (--client-index I --client-count N): this machine
   * runs connections I × c .. (I + 1) × c of the `connections` (= N × c) a
   * single run would have, with their key streams and shares. Absent: 0 and
   * 1 (all of them).
   */
  clientIndex?: number;
  clientCount?: number;
  /**
   * --cpus: the CPUs the load runs on. The native engine's worker threads pin
   * themselves (crates/respbench-core/src/affinity.rs); the JS engine runs in
   * the process the CLI pinned (packages/cli/src/cpus.ts). Absent: not pinned.
   */
  cpus?: number[];
  /**
   * --io: the native engine's I/O backend (crates/respbench-core/src/io):
   * io_uring, epoll, or auto (io_uring where the kernel and sandbox allow
   * it, else epoll). The JS engine ignores it. Absent: auto.
   */
  io?: IoChoice;
  /**
   * --reconnect: a connection that drops mid-run is opened again (handshake
   * and all) and goes on; null or absent = a drop ends the run.
   */
  reconnect?: Reconnect | null;
  /**
   * Hidden --client-tracking (RESP3 only): CLIENT TRACKING on in the
   * handshake, so the server sends invalidation push frames for keys the
   * connection read and another client changed. Absent = false.
   */
  clientTracking?: boolean;
  /**
   * --ramp-connections start:step:every (a duration run, closed loop): the
   * measured phase opens `start` connections, then `step` more every
   * `everyMs`, up to `connections` (ids in order). Absent or null: all at once.
   */
  rampConnections?: RampConnections | null;
  /**
   * Internal, per socket (never set by the CLI on the plan it runs): a
   * --read-from connection to a cluster replica, which sends READONLY in its
   * handshake. Absent = false.
   */
  readOnly?: boolean;
  /**
   * --cluster: a Redis Cluster. Each connection opens one socket per primary
   * and each request goes to its key's slot owner (docs/cluster.md). The
   * CLI discovers `nodes` and `slots` from the seeds before the engine runs
   * (cluster.ts); the engines only route. Absent or null = one server.
   */
  cluster?: ClusterPlan | null;
}

/** memtier's staircase of connections (--ramp-connections). */
export interface RampConnections {
  start: number;
  step: number;
  everyMs: number;
}

/**
 * When connection `id` of the measured phase opens, ms after the phase's
 * start: 0 for the first `start`, then `everyMs` per `step`.
 */
export function rampOpenAtMs(ramp: RampConnections | null | undefined, id: number): number {
  if (!ramp || id < ramp.start) return 0;
  return (Math.floor((id - ramp.start) / ramp.step) + 1) * ramp.everyMs;
}

/** One command of a weighted mix. */
export interface CommandSpec {
  /** A template (or a bare name) as --set-cmd takes it. */
  template: string;
  /** Its share of the requests: weight / the sum of the weights; an integer, at least 1. */
  weight: number;
  /** Its own key pattern; null = the run's (keyPattern). */
  keyPattern: KeyPattern | null;
}

/** A Redis Cluster's topology as the run uses it (--cluster). */
export interface ClusterPlan {
  /** Where discovery starts, `host:port`; the first that answers is used. */
  seeds: string[];
  /** The primaries, in the order discovery found them (slot order). */
  nodes: ClusterNode[];
  /** Slot ranges `[first, last, node]`, both ends included; node indexes `nodes`. Every slot covered. */
  slots: [number, number, number][];
  /**
   * --read-from: where the get side of the stream (GET-like requests) goes:
   * each slot's primary, a replica of it, or either (spread per connection,
   * see readTarget). Writes always go to the primary. Absent = 'primary'.
   */
  readFrom?: ReadFrom;
  /** Each primary's replicas, by index into `nodes`, as discovery found them (absent: none known). */
  replicas?: ClusterNode[][];
}

export type ReadFrom = 'primary' | 'replica' | 'any';

/**
 * --read-from: where connection `connection` sends its reads of primary
 * `node`: -1 the primary itself (its one socket sends everything), else the
 * index of the replica in `replicas[node]` (a second socket, opened with
 * READONLY, sends the reads; the primary's socket the writes). `replica`:
 * replica `connection mod R`; `any`: member `connection mod (1 + R)` of
 * primary-then-replicas. The same rule in Rust (plan.rs read_target).
 */
export function readTarget(cluster: ClusterPlan, connection: number, node: number): number {
  const replicas = cluster.replicas?.[node]?.length ?? 0;
  if (replicas === 0 || !cluster.readFrom || cluster.readFrom === 'primary') return -1;
  if (cluster.readFrom === 'replica') return connection % replicas;
  return (connection % (1 + replicas)) - 1;
}

export interface ClusterNode {
  host: string;
  port: number;
}

/** `host:port` of a cluster node, as messages and per-node figures name it. */
export function nodeLabel(n: ClusterNode): string {
  return n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`;
}

/** Slot → node index (16384 entries) from a ClusterPlan's ranges. */
export function slotOwners(cluster: ClusterPlan): Uint16Array {
  const owner = new Uint16Array(16384);
  for (const [first, last, node] of cluster.slots) owner.fill(node, first, last + 1);
  return owner;
}

/** How a dropped connection is opened again (--reconnect). */
export interface Reconnect {
  /** Attempts per drop before the run ends (--reconnect-attempts). */
  attempts: number;
  /** Wait after the first failed attempt, doubled after each (--reconnect-backoff), capped at RECONNECT_BACKOFF_CAP_MS. */
  backoffMs: number;
}

/** The longest wait between two reconnect attempts, ms (unless --reconnect-backoff itself is longer). */
export const RECONNECT_BACKOFF_CAP_MS = 5000;

/** The wait before reconnect attempt `attempt` (0-based) of one drop: none before the first, then backoff doubling, capped. */
export function reconnectDelayMs(r: Reconnect, attempt: number): number {
  if (attempt === 0) return 0;
  const cap = Math.max(RECONNECT_BACKOFF_CAP_MS, r.backoffMs);
  return Math.min(cap, r.backoffMs * 2 ** Math.min(attempt - 1, 30));
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

/** The connection ids this machine runs: [first, first + count). */
export function localConnections(plan: Plan): { first: number; count: number } {
  const n = Math.max(1, plan.clientCount ?? 1);
  const count = Math.floor(plan.connections / n);
  return { first: Math.min(plan.clientIndex ?? 0, n - 1) * count, count };
}

/** Why a run ended early. */
/** `auth`: the server said NOAUTH during the run (not, or no longer, logged in). */
export type FailureKind = 'connect' | 'closed' | 'protocol' | 'timeout' | 'interrupted' | 'preload' | 'internal' | 'auth';

export interface Failure {
  kind: FailureKind;
  message: string;
}

/** What an engine measured: counters and the histogram, nothing derived. */
export interface RawResult extends Omit<Counters, 'lost' | 'reconnects' | 'downNs' | 'moved' | 'asked' | 'retried' | 'staleReads'> {
  engine: EngineName;
  elapsedNs: number;
  histogram: HistogramData;
  /**
   * The timed requests' latencies per op kind (the SET side and the GET
   * side; for -t or a command on the line, its command): together they are
   * `histogram`. Absent from results written before they existed.
   */
  setHistogram?: HistogramData;
  getHistogram?: HistogramData;
  /** A command mix (Plan.commands): each command's latencies, in the mix's order. Absent otherwise. */
  commandHistograms?: HistogramData[];
  preloadRequests: number;
  preloadElapsedNs: number;
  /** Requests sent and answered during --warmup, in no figure (absent = 0). */
  warmupRequests?: number;
  warmupElapsedNs?: number;
  /** --rate: latency from the actual send (the main histogram counts from the intended send). */
  serviceHistogram?: HistogramData | null;
  /**
   * --rate: how late each timed request went out against its schedule
   * (actual send − intended send, ns): the client's own lateness, or a full
   * window. Null without --rate (absent = null).
   */
  scheduleLagHistogram?: HistogramData | null;
  /** The JS engine's event-loop delay over the measured phase; null for the native engine (absent = null). */
  eventLoopDelay?: EventLoopDelay | null;
  failure: Failure | null;
  /**
   * Requests written whose replies had not come when the run stopped early
   * (an interrupt); absent when the engine does not count them.
   */
  unanswered?: number;
  /** --reconnect (present only then): the measured phase's requests lost to drops, reconnects, and time down (Counters). */
  lost?: number;
  reconnects?: number;
  downNs?: number;
  /** The measured phase interval by interval (RunOptions.intervalMs), in order (absent in older results). */
  intervals?: RawInterval[];
  /** Wall clock when the measured phase started, ms since the Unix epoch: interval times count from it. */
  /**
   * Wall-clock time from asking the engine to run to the first timed
   * request, less the preload and the warmup: opening the connections and
   * their handshakes (and, in a cluster, every node's). Set by runPlan for
   * both engines; absent in results written before it existed.
   */
  connectElapsedNs?: number;
  startedUnixMs?: number;
  /** --cluster: the measured phase per primary, in ClusterPlan.nodes order (absent without --cluster). */
  nodes?: RawNode[];
  /** --cluster: the measured phase's redirections by kind (absent without --cluster). */
  redirections?: Redirections;
  /**
   * --cluster: the first topology refresh reply refused as no whole slot
   * map (`host:port: why`, topology.ts's words); the map in use was kept.
   * Absent when none was.
   */
  topologyRejected?: string;
  /**
   * --read-from replica|any with --verify-get: reads a replica answered with
   * nil for a key written (and acknowledged) earlier in this run, or preloaded:
   * replication lag, counted apart from misses, lost writes and mismatches.
   * Absent unless reads go to replicas.
   */
  staleReads?: number;
}

/** --cluster: replies that sent a request elsewhere or again, by kind (Counters' moved, asked, retried). */
export interface Redirections {
  moved: number;
  ask: number;
  /** -TRYAGAIN and -CLUSTERDOWN: sent again to the same node after a backoff. */
  tryagain: number;
}

/** What the measured phase counted on one cluster primary. */
export interface RawNode {
  /** `host:port` */
  node: string;
  requests: number;
  errors: number;
  /** Replies from it that redirected a request (MOVED, ASK, TRYAGAIN, CLUSTERDOWN). */
  redirections: number;
  /** Latency of the requests it answered. */
  histogram: HistogramData;
}


/**
 * How late the JS engine's event loop ran a timer during the measured phase
 * (perf_hooks.monitorEventLoopDelay, its interval taken off: 1 ms under
 * --rate, 10 ms in a closed loop, engine-js/run.ts), in ns: time the engine
 * could not read replies or send, whatever the server did.
 */
export interface EventLoopDelay {
  /** Timer runs measured. */
  samples: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/** What both engines implement: the JS engine (./index.ts) and the native one (../engine-native.ts). */
export interface Engine {
  name: EngineName;
  run(plan: Plan, options?: RunOptions): Promise<RawResult>;
  /** The native engine: which I/O backend `plan` runs on here, asked before the run (the header says it). */
  ioBackend?(plan: Plan): IoBackend;
}

/** --io, as given. */
export type IoChoice = 'auto' | 'uring' | 'epoll';
export const IO_CHOICES: readonly IoChoice[] = ['auto', 'uring', 'epoll'];

/** What --io resolves to on this machine: a backend (with why, when it is not io_uring under auto), or why --io uring cannot run. */
export interface IoBackend {
  backend: 'io_uring' | 'epoll' | null;
  note: string | null;
  error: string | null;
}
