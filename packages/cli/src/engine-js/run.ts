/**
 * A run: preload (get mode), warmup (--warmup), then the measured phase, each
 * over fresh connections. A phase opens its connections, drives them until
 * each has its share answered or time is up, and watches them for stalls
 * (--timeout) and progress. Paired with crates/respbench-core/src/run.rs.
 */
import net from 'node:net';
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';
import { ConnectInterrupted, Connection, openConnection, Pacer, type Pace } from './connection.js';
import { newCounters, type Counters } from './counters.js';
import { LatencyHistogram, OpHistograms, valueAtPercentileOf } from './histogram.js';
import { windowRefusal } from './limits.js';
import { localConnections, nodeLabel, rampOpenAtMs, readTarget, type EventLoopDelay, type Failure, type Plan, type RawInterval, type RawNode, type RawResult } from './plan.js';
import { DEFAULT_INTERVAL_MS, type Phase, type RunOptions } from './progress.js';
import { PreparedPlan, SEND_ALL, SEND_READS, SEND_WRITES, type Side } from './request-source.js';

/** Runs a Plan through every phase; a failure ends the run with the counters so far. */
export async function run(plan: Plan, options: RunOptions = {}): Promise<RawResult> {
  // As the native engine's Plan::check: refused before any connection.
  const refusal = windowRefusal(plan);
  if (refusal) throw new Error(refusal);
  const clients = plan.clientCount ?? 1;
  if (!(clients >= 1 && (plan.clientIndex ?? 0) < clients && plan.connections % clients === 0)) {
    throw new Error('clientIndex must be below clientCount, and connections a multiple of clientCount');
  }
  const prepared = new PreparedPlan(plan);
  const preloadCounters = newCounters();
  const counters = newCounters();
  const histogram = new OpHistograms(prepared.commandOps());
  let preloadElapsedNs = 0;
  let failure: Failure | null = null;
  if (prepared.preloadTotal > 0) {
    const pre = await runPhase(prepared, 'preload', preloadCounters, null, null, options);
    preloadElapsedNs = pre.elapsedNs;
    if (pre.failure) failure = { kind: pre.failure.kind, message: `preload: ${pre.failure.message}` };
    else if (preloadCounters.errors > 0) failure = { kind: 'preload', message: `preload: the server answered ${preloadCounters.errors} writes with errors, first: ${preloadCounters.firstError}` };
  }
  const warmupCounters = newCounters();
  let warmupElapsedNs = 0;
  if (!failure && plan.warmupMs > 0) {
    const warm = await runPhase(prepared, 'warmup', warmupCounters, null, null, options);
    warmupElapsedNs = warm.elapsedNs;
    if (warm.failure) failure = { kind: warm.failure.kind, message: `warmup: ${warm.failure.message}` };
  }
  const serviceHistogram = plan.rate > 0 ? new LatencyHistogram() : null;
  const lag: PhaseLag = {
    schedule: plan.rate > 0 ? new LatencyHistogram() : null,
    loop: monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS }),
  };
  let elapsedNs = 0;
  let unanswered = 0;
  let intervals: RawInterval[] = [];
  let startedUnixMs = Date.now();
  let nodes: RawNode[] | undefined;
  if (!failure) {
    const outcome = await runPhase(prepared, 'run', counters, histogram, serviceHistogram, options, lag);
    elapsedNs = outcome.elapsedNs;
    failure = outcome.failure;
    unanswered = outcome.unanswered ?? 0;
    intervals = outcome.intervals ?? [];
    startedUnixMs = outcome.startedUnixMs ?? startedUnixMs;
    nodes = outcome.nodes;
  }
  // Field by field, in the order `--json` has always printed them.
  return {
    engine: 'js',
    requests: counters.requests,
    sets: counters.sets,
    gets: counters.gets,
    ok: counters.ok,
    errors: counters.errors,
    misses: counters.misses,
    mismatches: counters.mismatches,
    lostWrites: counters.lostWrites,
    ...(plan.cluster?.readFrom && plan.cluster.readFrom !== 'primary' ? { staleReads: counters.staleReads } : {}),
    pushes: counters.pushes,
    bytesOut: counters.bytesOut,
    bytesIn: counters.bytesIn,
    elapsedNs,
    histogram: histogram.sum().toData(),
    setHistogram: histogram.set.toData(),
    getHistogram: histogram.get.toData(),
    ...(prepared.isMix ? { commandHistograms: histogram.byCommand.map((h) => h.toData()) } : {}),
    preloadRequests: preloadCounters.sets,
    preloadElapsedNs,
    warmupRequests: warmupCounters.sets + warmupCounters.gets,
    warmupElapsedNs,
    serviceHistogram: serviceHistogram ? serviceHistogram.toData() : null,
    scheduleLagHistogram: lag.schedule ? lag.schedule.toData() : null,
    eventLoopDelay: eventLoopDelayOf(lag.loop),
    firstError: counters.firstError ?? (failure ? preloadCounters.firstError : null),
    firstMismatch: counters.firstMismatch,
    failure,
    // Only an interrupted run has requests left unanswered worth telling.
    ...(failure?.kind === 'interrupted' ? { unanswered } : {}),
    // Only a run with --reconnect counts drops.
    ...(plan.reconnect ? { lost: counters.lost, reconnects: counters.reconnects, downNs: Math.round(counters.downNs) } : {}),
    intervals,
    startedUnixMs,
    ...(nodes ? { nodes } : {}),
    // Only a --cluster run counts redirections.
    ...(plan.cluster ? { redirections: { moved: counters.moved, ask: counters.asked, tryagain: counters.retried } } : {}),
  };
}

/**
 * The measured phase's time series: the connections record into `current`,
 * which holds the current interval only; at each boundary (a timer) it is
 * added to the phase's histograms, written into a RawInterval and emptied.
 * No work per reply. Paired with IntervalClock in crates/respbench-core/src/run.rs.
 */
class IntervalClock {
  readonly intervals: RawInterval[] = [];
  private index = 0;
  private before: Counters;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** The phase's latencies so far, the current interval apart. */
    readonly phase: OpHistograms,
    private readonly everyMs: number,
    private readonly start: number,
    private readonly counters: Counters,
    private readonly current: OpHistograms,
    private readonly onInterval: ((i: RawInterval) => void) | undefined,
    /** Connections open now (they only grow under --ramp-connections). */
    private readonly openNow: () => number,
    /** A command mix: each interval carries each command's latencies. */
    private readonly perCommand = false,
  ) {
    this.before = { ...counters };
    this.schedule();
  }

  private schedule(): void {
    const due = this.start + (this.index + 1) * this.everyMs;
    this.timer = setTimeout(() => {
      this.cut(performance.now());
      this.schedule();
    }, Math.max(0, due - performance.now()));
  }

  /** Ends the current interval at `now`; intervals a late timer slept through are recorded empty. */
  private cut(now: number): void {
    const c = this.counters;
    const b = this.before;
    const at = (i: number) => i * this.everyMs * 1e6;
    this.emit({
      index: this.index,
      startNs: at(this.index),
      endNs: Math.min(Math.round((now - this.start) * 1e6), at(this.index + 1)),
      requests: c.requests - b.requests,
      sets: c.sets - b.sets,
      gets: c.gets - b.gets,
      errors: c.errors - b.errors,
      misses: c.misses - b.misses,
      mismatches: c.mismatches - b.mismatches,
      lostWrites: c.lostWrites - b.lostWrites,
      setHistogram: this.current.set.toData(),
      getHistogram: this.current.get.toData(),
      ...(this.perCommand ? { commandHistograms: this.current.byCommand.map((h) => h.toData()) } : {}),
      connections: this.openNow(),
    });
    this.phase.merge(this.current);
    this.current.reset();
    this.before = { ...c };
    this.index++;
    const empty = () => ({ unit: 'ns' as const, significantDigits: 3 as const, buckets: [] });
    while (this.start + (this.index + 1) * this.everyMs <= now) {
      const commandHistograms = this.perCommand ? { commandHistograms: this.current.byCommand.map(empty) } : {};
      this.emit({ index: this.index, startNs: at(this.index), endNs: at(this.index + 1), requests: 0, sets: 0, gets: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: empty(), getHistogram: empty(), ...commandHistograms, connections: this.openNow() });
      this.index++;
    }
  }

  private emit(i: RawInterval): void {
    this.intervals.push(i);
    this.onInterval?.(i);
  }

  /** p99 of the phase so far (the intervals cut and the current one), for the progress line. */
  p99(): number {
    return valueAtPercentileOf([...this.phase.byCommand, ...this.current.byCommand], 99);
  }

  /** The last interval cut at the end, and the phase's latencies back in `current`. */
  finish(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.cut(now);
    this.current.merge(this.phase);
  }
}

/** monitorEventLoopDelay's timer interval: the finest it has (the delay is how late each run of it came). */
const LOOP_DELAY_RESOLUTION_MS = 1;

/** What the measured phase watches of the client's own lateness. */
interface PhaseLag {
  /** --rate: actual − intended send of each request. */
  schedule: LatencyHistogram | null;
  /** Enabled while the phase's connections run. */
  loop: IntervalHistogram;
}

/** The event-loop delay histogram as RawResult carries it: the timer's own interval taken off each run. */
function eventLoopDelayOf(h: IntervalHistogram): EventLoopDelay {
  const samples = h.count;
  const late = (ns: number) => (samples > 0 ? Math.max(0, Math.round(ns) - LOOP_DELAY_RESOLUTION_MS * 1e6) : 0);
  return { samples, p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max), mean: late(h.mean) };
}

interface PhaseOutcome {
  elapsedNs: number;
  failure: Failure | null;
  /** The measured phase: its time series, and the wall clock at its start. */
  intervals?: RawInterval[];
  startedUnixMs?: number;
  /** Requests written whose replies had not come when an interrupt stopped the phase. */
  unanswered?: number;
  /** --cluster, the measured phase: per primary. */
  nodes?: RawNode[];
}

/**
 * The servers a phase's connections go to: the plan's one server, or under
 * --cluster each primary (the plan with its host and port), in
 * ClusterPlan.nodes order.
 */
export function targetPlans(plan: Plan): Plan[] {
  if (!plan.cluster) return [plan];
  return plan.cluster.nodes.map((n) => ({ ...plan, host: n.host, port: n.port, socket: null }));
}

/** One socket of a phase: whose connection, which primary's share (-1: one server), which side of it, and where it goes. */
export interface PhaseSocket {
  id: number;
  node: number;
  side: Side;
  target: Plan;
}

/**
 * The sockets of a phase, in the order they are opened: per connection (this
 * machine's), per primary under --cluster; with --read-from replica|any, a
 * connection whose reads of a primary go to a replica has two for it: the
 * writes to the primary, then the reads to the replica (READONLY). The
 * preload only writes, and a set run without a mix has no reads: one socket per
 * primary (a mix's reads are its GET-like commands).
 * Paired with phase_sockets in crates/respbench-core/src/run.rs.
 */
export function phaseSockets(plan: Plan, phase: Phase): PhaseSocket[] {
  const local = localConnections(plan);
  const targets = targetPlans(plan);
  const out: PhaseSocket[] = [];
  for (let id = local.first; id < local.first + local.count; id++) {
    if (!plan.cluster) {
      out.push({ id, node: -1, side: SEND_ALL, target: targets[0] });
      continue;
    }
    for (let node = 0; node < targets.length; node++) {
      const replica = phase === 'preload' || (plan.mode === 'set' && !plan.commands?.length) ? -1 : readTarget(plan.cluster, id, node);
      if (replica < 0) {
        out.push({ id, node, side: SEND_ALL, target: targets[node] });
        continue;
      }
      const r = plan.cluster.replicas![node][replica];
      out.push({ id, node, side: SEND_WRITES, target: targets[node] });
      out.push({ id, node, side: SEND_READS, target: { ...targets[node], host: r.host, port: r.port, readOnly: true } });
    }
  }
  return out;
}

/**
 * Opens a phase's sockets (phaseSockets), one after another: those that start
 * with it (under --ramp-connections the measured phase's first `start`; the
 * rest open while it runs: the ramp is refused with --cluster, so each of those
 * is one single-server socket).
 */
async function openAll(plan: Plan, phase: Phase, layout: PhaseSocket[], signal: AbortSignal | undefined): Promise<net.Socket[] | Failure> {
  const sockets: net.Socket[] = [];
  const ramp = rampOf(plan, phase);
  try {
    for (const s of layout) {
      if (rampOpenAtMs(ramp, s.id) > 0) break;
      sockets.push(await openConnection(s.target, signal));
    }
    return sockets;
  } catch (err) {
    for (const s of sockets) s.destroy();
    if (err instanceof ConnectInterrupted) return { kind: 'interrupted', message: err.message };
    return { kind: 'connect', message: (err as Error).message };
  }
}

/** How connection `id` of a phase starting at `start` may send. */
function paceFor(plan: Plan, phase: Phase, id: number, start: number): Pace {
  const durationMs = phaseDurationMs(plan, phase);
  const rate = phase === 'preload' ? 0 : plan.rate;
  return {
    deadline: durationMs > 0 ? start + durationMs : Infinity,
    intervalMs: rate > 0 ? (1000 * plan.connections) / rate : 0,
    offsetMs: rate > 0 ? (1000 * id) / rate : 0,
  };
}

/** The connection ramp of a phase: the measured phase's only (the CLI refuses one with --cluster). */
function rampOf(plan: Plan, phase: Phase): Plan['rampConnections'] {
  return phase === 'run' && !plan.cluster ? plan.rampConnections : null;
}

/** A time-bound phase's length in ms; 0 when a request count bounds it. */
function phaseDurationMs(plan: Plan, phase: Phase): number {
  return phase === 'warmup' ? plan.warmupMs : phase === 'run' ? plan.durationMs : 0;
}

/** Runs one phase over fresh connections. */
async function runPhase(
  prepared: PreparedPlan,
  phase: Phase,
  counters: Counters,
  histogram: OpHistograms | null,
  serviceHistogram: LatencyHistogram | null,
  options: RunOptions,
  lag: PhaseLag | null = null,
): Promise<PhaseOutcome> {
  const plan = prepared.plan;
  const durationMs = phaseDurationMs(plan, phase);
  const layout = phaseSockets(plan, phase);
  const sockets = await openAll(plan, phase, layout, options.signal);
  if (!Array.isArray(sockets)) return { elapsedNs: 0, failure: sockets };
  return new Promise<PhaseOutcome>((resolve) => {
    const connections: Connection[] = [];
    // This machine's connections (all of them unless --client-count), ids as in a single run.
    let open = layout.length;
    let failure: Failure | null = null;
    // Allocated before the clock starts.
    const phaseHistograms = histogram ? histogram.emptyLike() : null;
    const nodeTallies = histogram && plan.cluster ? plan.cluster.nodes.map(() => ({ requests: 0, errors: 0, redirections: 0, histogram: new LatencyHistogram() })) : null;
    const start = performance.now();
    const startedUnixMs = Date.now();
    const clock = histogram && phaseHistograms ? new IntervalClock(phaseHistograms, options.intervalMs ?? DEFAULT_INTERVAL_MS, start, counters, histogram, options.onInterval, () => (plan.cluster ? localConnections(plan).count : connections.length), prepared.isMix) : null;
    let timer: NodeJS.Timeout | null = null;
    // --ramp-connections: the timers that open the later steps' connections.
    const rampTimers: NodeJS.Timeout[] = [];
    // Their connections, until their timer takes them (a stop finishes them unopened).
    const waiting = new Set<number>();
    let stopped = false;
    // Requests written whose replies had not come when the phase was stopped.
    let unanswered = 0;
    const onAbort = () => {
      unanswered = connections.reduce((n, c) => n + c.inflightCount, 0);
      stopAll({ kind: 'interrupted', message: 'interrupted' });
    };
    const finish = (_id: number, f: Failure | null) => {
      if (f && !failure) {
        failure = f;
        stopAll(f);
      }
      open--;
      if (open === 0) {
        for (const t of rampTimers) clearTimeout(t);
        // The phase ended when the last share was answered, not when the
        // servers had closed their sides after it (Connection.complete).
        let end = performance.now();
        if (!failure) end = connections.reduce((latest, c) => Math.max(latest, c.answeredAt), start);
        const elapsedNs = (end - start) * 1e6;
        lag?.loop.disable();
        if (timer) clearInterval(timer);
        clock?.finish(performance.now());
        options.signal?.removeEventListener('abort', onAbort);
        const nodeFigures = nodeTallies && plan.cluster
          ? nodeTallies.map((t, i) => ({ node: nodeLabel(plan.cluster!.nodes[i]), requests: t.requests, errors: t.errors, redirections: t.redirections, histogram: t.histogram.toData() }))
          : undefined;
        resolve({ elapsedNs, failure, unanswered, ...(clock ? { intervals: clock.intervals, startedUnixMs } : {}), ...(nodeFigures ? { nodes: nodeFigures } : {}) });
      }
    };
    const stopAll = (f: Failure) => {
      stopped = true;
      for (const t of rampTimers) clearTimeout(t);
      const unopened = [...waiting];
      waiting.clear();
      for (const id of unopened) finish(id, null);
      for (const c of connections) c.stop(f);
    };
    const pace = (id: number) => paceFor(plan, phase, id, start);
    const pacer = pace(0).intervalMs > 0 ? new Pacer(layout.length) : null;
    // One socket of the layout (phaseSockets): node is --cluster's primary (-1: the one server),
    // side --read-from's share of it (SEND_READS: a replica's socket).
    // `socketIndex`: its place in the layout (the pacer's index).
    const connectionFor = ({ id, node, side, target }: PhaseSocket, socketIndex: number, socket: net.Socket) =>
      new Connection({
        id,
        socketIndex,
        socket,
        source: phase === 'preload' ? prepared.preloadSource(id, node) : prepared.runSource(id, durationMs > 0, node, side),
        node: node >= 0 && nodeTallies ? nodeTallies[node] : null,
        nodes: nodeTallies,
        target,
        nodeIndex: node,
        replica: side === SEND_READS,
        prepared,
        counters,
        histogram,
        serviceHistogram,
        lagHistogram: lag?.schedule ?? null,
        pace: pace(id),
        pacer,
        finish,
        signal: options.signal,
      });
    for (let n = 0; n < sockets.length; n++) connections.push(connectionFor(layout[n], n, sockets[n]));
    // --ramp-connections: each later step opens its connections (through
    // openConnection, as the first ones) when due and starts them; a step
    // due at or after the phase's end, or after a stop, opens none.
    const ramp = rampOf(plan, phase);
    const deadline = start + durationMs;
    // The ramp (never with --cluster): the layout is one socket per connection, and the first unopened one's id is next.
    const local = localConnections(plan);
    for (let n = sockets.length < layout.length ? layout[sockets.length].id - local.first : local.count; n < local.count; ) {
      const at = rampOpenAtMs(ramp, local.first + n);
      let last = n;
      while (last < local.count && rampOpenAtMs(ramp, local.first + last) === at) last++;
      const ids = Array.from({ length: last - n }, (_, k) => local.first + n + k);
      n = last;
      if (at >= durationMs) {
        // Never opened: the phase does not wait for them.
        open -= ids.length;
        continue;
      }
      for (const id of ids) waiting.add(id);
      rampTimers.push(
        setTimeout(async () => {
          for (const id of ids) waiting.delete(id);
          for (const id of ids) {
            if (stopped || performance.now() >= deadline) {
              finish(id, null);
              continue;
            }
            let socket: net.Socket;
            try {
              socket = await openConnection(plan, options.signal);
            } catch (err) {
              const f: Failure = err instanceof ConnectInterrupted ? { kind: 'interrupted', message: err.message } : { kind: 'connect', message: (err as Error).message };
              finish(id, f);
              continue;
            }
            if (stopped || performance.now() >= deadline) {
              socket.destroy();
              finish(id, null);
              continue;
            }
            const c = connectionFor({ id, node: -1, side: SEND_ALL, target: plan }, id - local.first, socket);
            connections.push(c);
            c.start();
          }
        }, Math.max(0, start + at - performance.now())),
      );
    }
    const timeoutMs = plan.timeoutMs;
    timer = setInterval(() => {
      const now = performance.now();
      if (timeoutMs > 0) {
        for (const c of connections) {
          const oldest = c.oldestSentAt();
          if (oldest >= 0 && now - oldest > timeoutMs) {
            c.stop({ kind: 'timeout', message: `${c.label()}: no reply within ${timeoutMs} ms (--timeout) after ${c.received} replies${c.partialNote()}` });
          }
        }
      }
      if (options.onProgress) {
        let done = 0;
        for (const c of connections) done += c.received;
        const total = durationMs > 0 ? 0 : phase === 'run' ? plan.requests : prepared.preloadTotal;
        const p99Ns = clock && done > 0 ? clock.p99() : undefined;
        options.onProgress({ done, total, errors: counters.errors, elapsedNs: (now - start) * 1e6, phase, durationNs: durationMs * 1e6, p99Ns });
      }
    }, timeoutMs > 0 ? Math.min(250, Math.max(10, timeoutMs / 4)) : 250);
    timer.unref();
    if (options.signal) {
      if (options.signal.aborted) queueMicrotask(onAbort);
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    lag?.loop.enable();
    for (const c of connections) c.start();
  });
}
