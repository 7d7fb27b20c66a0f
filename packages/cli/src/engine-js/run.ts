/**
 * A run: preload (get mode), warmup (--warmup), then the measured phase, each
 * over fresh connections (worker.ts runs a phase), and the RawResult put
 * together from their counters. Owns no policy. Paired with
 * crates/respbench-core/src/run.rs.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { newCounters, type Counters } from './counters.js';
import { LatencyHistogram, OpHistograms } from './histogram.js';
import { windowRefusal } from './limits.js';
import { optimisingCompilersOffFor, watchSchedule } from './jit.js';
import { localConnections, type EventLoopDelay, type Failure, type Plan, type RawInterval, type RawNode, type RawResult } from './plan.js';
import type { RunOptions } from './progress.js';
import { PreparedPlan } from './request-source.js';
import { runPhase, type PhaseLag } from './worker.js';

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
  let preloadElapsedNs = 0;
  let failure: Failure | null = null;
  if (prepared.preloadTotal > 0) {
    const pre = await runPhase(prepared, 'preload', { counters: preloadCounters, histogram: null, serviceHistogram: null, lag: null }, options);
    preloadElapsedNs = pre.elapsedNs;
    if (pre.failure) failure = { kind: pre.failure.kind, message: `preload: ${pre.failure.message}` };
    else if (preloadCounters.errors > 0) failure = { kind: 'preload', message: `preload: the server answered ${preloadCounters.errors} writes with errors, first: ${preloadCounters.firstError}` };
  }
  // The paced phases (warmup and the measured one) without V8's optimising
  // compilers, whose background compiles made sends late (jit.ts).
  const compilersBackOn = optimisingCompilersOffFor((plan.rate * localConnections(plan).count) / plan.connections);
  try {
    return await pacedPhases(plan, prepared, preloadCounters, preloadElapsedNs, failure, options, compilersBackOn);
  } finally {
    compilersBackOn?.();
  }
}

/** Warmup and the measured phase, and the RawResult of the whole run. */
async function pacedPhases(
  plan: Plan,
  prepared: PreparedPlan,
  preloadCounters: Counters,
  preloadElapsedNs: number,
  preloadFailure: Failure | null,
  options: RunOptions,
  compilersBackOn: (() => void) | null,
): Promise<RawResult> {
  let failure = preloadFailure;
  const counters = newCounters();
  const histogram = new OpHistograms(prepared.commandOps());
  const warmupCounters = newCounters();
  let warmupElapsedNs = 0;
  if (!failure && plan.warmupMs > 0) {
    const warm = await runPhase(prepared, 'warmup', { counters: warmupCounters, histogram: null, serviceHistogram: null, lag: null }, options);
    warmupElapsedNs = warm.elapsedNs;
    if (warm.failure) failure = { kind: warm.failure.kind, message: `warmup: ${warm.failure.message}` };
  }
  const serviceHistogram = plan.rate > 0 ? new LatencyHistogram() : null;
  const lag: PhaseLag = {
    schedule: plan.rate > 0 ? new LatencyHistogram() : null,
    loop: monitorEventLoopDelay({ resolution: loopDelayResolutionMs(plan) }),
  };
  let elapsedNs = 0;
  let unanswered = 0;
  let intervals: RawInterval[] = [];
  let startedUnixMs = Date.now();
  let nodes: RawNode[] | undefined;
  let topologyRejected: string | undefined;
  if (!failure) {
    // With the compilers off, a schedule the engine falls behind turns them back on (jit.ts).
    const unwatch = compilersBackOn && lag.schedule ? watchSchedule(lag.schedule, compilersBackOn, (line) => process.stderr.write(`respbench: ${line}\n`)) : null;
    const outcome = await runPhase(prepared, 'run', { counters, histogram, serviceHistogram, lag }, options);
    unwatch?.();
    elapsedNs = outcome.elapsedNs;
    failure = outcome.failure;
    unanswered = outcome.unanswered ?? 0;
    intervals = outcome.intervals ?? [];
    startedUnixMs = outcome.startedUnixMs ?? startedUnixMs;
    nodes = outcome.nodes;
    topologyRejected = outcome.topologyRejected;
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
    eventLoopDelay: eventLoopDelayOf(lag.loop, loopDelayResolutionMs(plan)),
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
    ...(plan.cluster && topologyRejected !== undefined ? { topologyRejected } : {}),
  };
}

/**
 * monitorEventLoopDelay's timer interval (the delay is how late each run of
 * it came). Under --rate (capacity's steps too) the finest it has, 1 ms: the
 * schedule is kept to the millisecond and the verdict on client lag reads
 * it. A closed-loop run only reports it (`client lag:`), and a 1 ms timer
 * costs an idle loop a wake-up a millisecond (14-23 ms of CPU a
 * second measured, next to nothing the closed loop needs): 10 ms there, a
 * pause longer than that still measured whole, shorter ones sampled.
 */
const LOOP_DELAY_RESOLUTION_MS = 1;
const CLOSED_LOOP_DELAY_RESOLUTION_MS = 10;

function loopDelayResolutionMs(plan: Plan): number {
  return plan.rate > 0 ? LOOP_DELAY_RESOLUTION_MS : CLOSED_LOOP_DELAY_RESOLUTION_MS;
}

/** The event-loop delay histogram as RawResult carries it: the timer's own interval taken off each run. */
function eventLoopDelayOf(h: IntervalHistogram, resolutionMs: number): EventLoopDelay {
  const samples = h.count;
  const late = (ns: number) => (samples > 0 ? Math.max(0, Math.round(ns) - resolutionMs * 1e6) : 0);
  return { samples, p50: late(h.percentile(50)), p99: late(h.percentile(99)), max: late(h.max), mean: late(h.mean) };
}
