/**
 * A run: preload (get mode), warmup (--warmup), then the measured phase, each
 * over fresh connections. A phase opens its connections, drives them until
 * each has its share answered or time is up, and watches them for stalls
 * (--timeout) and progress. Paired with crates/respbench-core/src/run.rs.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ConnectInterrupted, Connection, openConnection, type Pace } from './connection.js';
import { newCounters, type Counters } from './counters.js';
import { LatencyHistogram } from './histogram.js';
import type { Failure, Plan, RawResult } from './plan.js';
import type { Phase, RunOptions } from './progress.js';
import { PreparedPlan } from './request-source.js';

/** Connect timeout when --timeout is off. */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** Runs a Plan through every phase; a failure ends the run with the counters so far. */
export async function run(plan: Plan, options: RunOptions = {}): Promise<RawResult> {
  const prepared = new PreparedPlan(plan);
  const preloadCounters = newCounters();
  const counters = newCounters();
  const histogram = new LatencyHistogram();
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
  let elapsedNs = 0;
  if (!failure) {
    const outcome = await runPhase(prepared, 'run', counters, histogram, serviceHistogram, options);
    elapsedNs = outcome.elapsedNs;
    failure = outcome.failure;
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
    pushes: counters.pushes,
    bytesOut: counters.bytesOut,
    bytesIn: counters.bytesIn,
    elapsedNs,
    histogram: histogram.toData(),
    preloadRequests: preloadCounters.sets,
    preloadElapsedNs,
    warmupRequests: warmupCounters.sets + warmupCounters.gets,
    warmupElapsedNs,
    serviceHistogram: serviceHistogram ? serviceHistogram.toData() : null,
    firstError: counters.firstError ?? (failure ? preloadCounters.firstError : null),
    firstMismatch: counters.firstMismatch,
    failure,
  };
}

interface PhaseOutcome {
  elapsedNs: number;
  failure: Failure | null;
}

/** Opens one socket per connection for a phase, one after another. */
async function openAll(plan: Plan, signal: AbortSignal | undefined): Promise<net.Socket[] | Failure> {
  const sockets: net.Socket[] = [];
  try {
    for (let c = 0; c < plan.connections; c++) {
      sockets.push(await openConnection(plan.host, plan.port, plan.timeoutMs > 0 ? plan.timeoutMs : DEFAULT_CONNECT_TIMEOUT_MS, signal));
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

/** A time-bound phase's length in ms; 0 when a request count bounds it. */
function phaseDurationMs(plan: Plan, phase: Phase): number {
  return phase === 'warmup' ? plan.warmupMs : phase === 'run' ? plan.durationMs : 0;
}

/** Runs one phase over fresh connections. */
async function runPhase(
  prepared: PreparedPlan,
  phase: Phase,
  counters: Counters,
  histogram: LatencyHistogram | null,
  serviceHistogram: LatencyHistogram | null,
  options: RunOptions,
): Promise<PhaseOutcome> {
  const plan = prepared.plan;
  const durationMs = phaseDurationMs(plan, phase);
  const sockets = await openAll(plan, options.signal);
  if (!Array.isArray(sockets)) return { elapsedNs: 0, failure: sockets };
  return new Promise<PhaseOutcome>((resolve) => {
    const connections: Connection[] = [];
    let open = plan.connections;
    let failure: Failure | null = null;
    const start = performance.now();
    let timer: NodeJS.Timeout | null = null;
    const onAbort = () => stopAll({ kind: 'interrupted', message: 'interrupted' });
    const finish = (_id: number, f: Failure | null) => {
      if (f && !failure) {
        failure = f;
        stopAll(f);
      }
      open--;
      if (open === 0) {
        // The phase ended when the last share was answered, not when the
        // servers had closed their sides after it (Connection.complete).
        let end = performance.now();
        if (!failure) end = connections.reduce((latest, c) => Math.max(latest, c.answeredAt), start);
        const elapsedNs = (end - start) * 1e6;
        if (timer) clearInterval(timer);
        options.signal?.removeEventListener('abort', onAbort);
        resolve({ elapsedNs, failure });
      }
    };
    const stopAll = (f: Failure) => {
      for (const c of connections) c.stop(f);
    };
    for (let id = 0; id < plan.connections; id++) {
      const source = phase === 'preload' ? prepared.preloadSource(id) : prepared.runSource(id, durationMs > 0);
      connections.push(
        new Connection({ id, socket: sockets[id], source, prepared, counters, histogram, serviceHistogram, pace: paceFor(plan, phase, id, start), finish }),
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
        options.onProgress({ done, total, errors: counters.errors, elapsedNs: (now - start) * 1e6, phase, durationNs: durationMs * 1e6 });
      }
    }, timeoutMs > 0 ? Math.min(250, Math.max(10, timeoutMs / 4)) : 250);
    timer.unref();
    if (options.signal) {
      if (options.signal.aborted) queueMicrotask(onAbort);
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    for (const c of connections) c.start();
  });
}
