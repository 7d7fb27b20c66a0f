/**
 * The capacity search: runs the workload open-loop at the rates the search
 * (search.ts) asks for, one whole run (runPlan) per step, and never reaches
 * into an engine. Each step runs over fresh connections: --warmup first,
 * then --step-duration measured, latency from when each request was due.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { ConnectInterrupted } from '../engine-js/connection.js';
import type { Engine, Plan } from '../engine-js/plan.js';
import type { RunOptions } from '../engine-js/progress.js';
import { redactPlan, runPlan, type RunResult } from '../run.js';
import { CapacitySearch, roundRate, type Bracket, type SearchEnd } from './search.js';
import { boundStep, decideLimit, measureStep, type CapacityStep, type Limit, type Window } from './step.js';
import type { Slo } from './slo.js';
import { stallShares, type StallMeter } from './machine-stalls.js';

/** Share of the closed-loop probe's throughput the ramp starts at. */
export const START_SHARE = 0.1;
/**
 * A step that kept its rate and had no more errors than allowed but broke
 * the SLO's latency is run once more, and fails only if it fails again:
 * one pause of the machine (another process, a GC) breaks the p99 of a
 * short step, and the search would put the capacity wherever it struck.
 * Steps past the capacity fall short of their rate, and errors do not go
 * away by asking again: those are believed at once.
 */
export const RETRY = 1;
/**
 * A step whose client lag alone broke the SLO (clientLagBrokeSlo) is run up
 * to this many times more: it measured the machine, not the server. If it
 * still does, it counts as failed, and a capacity resting on it is not
 * printed (end 'client-lag').
 */
export const LAG_RETRY = 2;
/** The longest search: a ramp of ~20 doublings and a bisection of ~20 halvings is far within it. */
export const MAX_STEPS = 40;

export interface CapacitySettings {
  slo: Slo;
  /** null: START_SHARE of a closed-loop probe's throughput. */
  startRate: number | null;
  stepDurationMs: number;
  warmupMs: number;
  precision: number;
  /** Length of the closed-loop probe. */
  probeMs: number;
  /** Run a step that failed with its rate kept once more before believing it (see RETRY). */
  retry: boolean;
}

export interface Probe {
  durationSec: number;
  opsPerSec: number;
}

/** 'client-lag': the lowest rate that failed did so on the client's own lag: no capacity of the server's was measured. */
export type CapacityEnd = SearchEnd | 'steps' | 'interrupted' | 'failed' | 'client-lag';

/** What `respbench capacity --json` prints. */
export interface CapacityReport {
  kind: 'capacity';
  version: 1;
  engine: Engine['name'];
  target: { host: string; port: number };
  /** The workload, as each step ran it (rate and duration are the steps'). */
  plan: Plan;
  slo: { text: string; latency: Slo['latency']; maxErrorShare: number };
  settings: { stepDurationMs: number; warmupMs: number; precision: number; retry: boolean };
  probe: Probe | null;
  startRate: number | null;
  steps: CapacityStep[];
  bracket: Bracket;
  /** The highest rate that met the SLO (requests per second); null when none did. */
  capacity: number | null;
  end: CapacityEnd;
  /** Who held back the lowest rate that failed. */
  limit: { by: Limit; atRate: number; reason: string } | null;
  /** end = 'failed': why. */
  failure: string | null;
  interrupted?: { signal: string };
}

export interface CapacityHooks {
  signal?: AbortSignal;
  /** Progress of the run under way (the probe or a step), as runPlan gives it. */
  onProgress?: RunOptions['onProgress'];
  onProbe?(probe: Probe, startRate: number): void;
  onStep?(step: CapacityStep): void;
  /** What measures the machine's stalls (machine-stalls.ts); not measured without one. */
  stallMeter?: StallMeter | null;
}

/** The cores the engine's work can use. */
export function clientCores(engine: Engine, plan: Plan): number {
  return engine.name === 'js' ? 1 : Math.max(1, Math.min(plan.threads, plan.connections, availableParallelism()));
}

async function measuredRun(engine: Engine, plan: Plan, hooks: CapacityHooks, meter: StallMeter | null = null): Promise<{ result: RunResult; cpuUs: number; wallUs: number; machineLate: number[] | null }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const stalls0 = meter?.read() ?? null;
  const result = await runPlan(engine, plan, { signal: hooks.signal, onProgress: hooks.onProgress });
  const machineLate = meter && stalls0 ? stallShares(stalls0, meter.read()) : null;
  const cpu = process.cpuUsage(cpu0);
  return { result, cpuUs: cpu.user + cpu.system, wallUs: (performance.now() - t0) * 1000, machineLate };
}

/**
 * The limit of every failed step, against the least loaded step's service
 * time (the lowest target rate measured; it changes as a ramp down finds
 * lower ones, so this runs over all steps each time).
 */
export function assignLimits(steps: CapacityStep[], window: Window): void {
  // A step the client's or the machine's stalls decided says nothing of the server, its service time included (a
  // stalled client reads replies late): it is no baseline, or a busy machine's 2.6 ms at 403/s made -c 8 × -P 1
  // look too small for 4000/s against a 200 us server.
  const measured = steps.filter((s) => s.serviceUs !== null && s.requests > 0 && !s.clientLagBrokeSlo);
  const least = measured.reduce<CapacityStep | null>((a, s) => (a === null || s.targetRate < a.targetRate ? s : a), null);
  const baseline = least?.serviceUs?.mean ?? null;
  for (const s of steps) {
    if (s.met) {
      s.limit = null;
      s.limitReason = null;
      s.heldBack = false;
      continue;
    }
    const d = decideLimit(s, baseline, window);
    s.limit = d.limit;
    s.limitReason = d.reason;
    s.heldBack = d.heldBack === true;
  }
}

export function limitOf(steps: CapacityStep[], bracket: Bracket): CapacityReport['limit'] {
  const s = boundStep(steps, bracket);
  return s && s.limit && s.limitReason ? { by: s.limit, atRate: s.targetRate, reason: s.limitReason } : null;
}

/** Each step's Plan, before its rate is set. */
function stepPlanOf(plan: Plan, settings: CapacitySettings): Plan {
  return { ...plan, durationMs: settings.stepDurationMs, warmupMs: settings.warmupMs, rate: 0 };
}

/** The report of a search before its first run: what it would have measured, nothing measured yet. */
function emptyReport(engine: Engine, plan: Plan, settings: CapacitySettings): CapacityReport {
  return {
    kind: 'capacity',
    version: 1,
    engine: engine.name,
    target: { host: plan.host, port: plan.port },
    plan: redactPlan(stepPlanOf(plan, settings)),
    slo: { text: '', latency: settings.slo.latency, maxErrorShare: settings.slo.maxErrorShare },
    settings: { stepDurationMs: settings.stepDurationMs, warmupMs: settings.warmupMs, precision: settings.precision, retry: settings.retry },
    probe: null,
    startRate: settings.startRate,
    steps: [],
    bracket: { met: null, failed: null },
    capacity: null,
    end: 'failed',
    limit: null,
    failure: null,
  };
}

/**
 * The report of a search whose Plan could not be prepared (under --cluster:
 * no seed told the topology): failed, or interrupted when a signal stopped it.
 */
export function unpreparedReport(engine: Engine, plan: Plan, settings: CapacitySettings, err: unknown): CapacityReport {
  const interrupted = err instanceof ConnectInterrupted;
  return { ...emptyReport(engine, plan, settings), end: interrupted ? 'interrupted' : 'failed', failure: interrupted ? null : ((err as Error)?.message ?? String(err)) };
}

/**
 * A whole search on a Plan that preparePlan (prepare.ts) completed: under
 * --cluster, with its topology. The machine's stalls are measured when
 * `hooks.stallMeter` is given (withStallMeter).
 */
export async function runCapacity(engine: Engine, plan: Plan, settings: CapacitySettings, hooks: CapacityHooks = {}): Promise<CapacityReport> {
  const meter = hooks.stallMeter ?? null;
  // --cluster: each connection has a window of -P per primary.
  const window: Window = { connections: plan.connections, pipeline: plan.pipeline, primaries: Math.max(1, plan.cluster?.nodes.length ?? 1) };
  const stepPlan = stepPlanOf(plan, settings);
  const report = emptyReport(engine, plan, settings);
  // get mode writes its keys once, before the first run; later runs read what is there.
  let preload = plan.preload;
  const stopped = (r: RunResult) => r.failure?.kind === 'interrupted' || hooks.signal?.aborted === true;
  const finish = (end: CapacityEnd, search: CapacitySearch | null, failure: string | null = null) => {
    if (search) report.bracket = search.bracket();
    report.capacity = report.bracket.met;
    // A rate that met the SLO shows the bound is within the client's send timing: a step that read otherwise was late by load.
    if (report.steps.some((s) => s.met)) for (const s of report.steps) if (s.clientLag) delete s.clientLag.tighterThanSendsUs;
    assignLimits(report.steps, window);
    report.limit = limitOf(report.steps, report.bracket);
    report.end = end;
    report.failure = failure;
    const bound = boundStep(report.steps, report.bracket);
    if ((bound?.clientLagBrokeSlo || bound?.heldBack) && (end === 'converged' || end === 'none-met' || end === 'steps')) {
      // The bracket rests on a step that measured the client, not the server: no capacity to print.
      report.end = 'client-lag';
      report.capacity = null;
      report.failure =
        bound.clientLag?.tighterThanSendsUs !== undefined
          ? `no capacity measured: ${bound.limitReason}`
          : `no capacity measured: the step at ${bound.targetRate}/s failed on the client's own lag (${bound.limitReason}); run it on a quieter machine, with more --threads (native) or fewer connections per process`;
    }
    return report;
  };

  let startRate = settings.startRate;
  if (startRate === null) {
    const probePlan: Plan = { ...plan, rate: 0, durationMs: settings.probeMs, warmupMs: 0, preload };
    const { result } = await measuredRun(engine, probePlan, hooks);
    if (stopped(result)) return finish('interrupted', null);
    if (result.failure) return finish('failed', null, `the closed-loop probe failed: ${result.failure.message}`);
    if (result.requests === 0) return finish('failed', null, 'the closed-loop probe got no reply');
    preload = false;
    report.probe = { durationSec: result.elapsedSec, opsPerSec: Math.round(result.opsPerSec * 10) / 10 };
    startRate = Math.max(1, roundRate(result.opsPerSec * START_SHARE));
    hooks.onProbe?.(report.probe, startRate);
  }
  report.startRate = startRate;
  const search = new CapacitySearch({ startRate, precision: settings.precision, minRate: Math.max(1, roundRate(startRate / 64)) });
  let tries = 0;
  let rate: number | null = null;
  for (let i = 1; i <= MAX_STEPS; i++) {
    if (tries === 0) rate = search.next();
    if (rate === null) return finish(search.end() ?? 'converged', search);
    const m = await measuredRun(engine, { ...stepPlan, rate, preload }, hooks, meter);
    if (stopped(m.result)) return finish('interrupted', search);
    if (m.result.failure) return finish('failed', search, `the step at ${rate}/s failed: ${m.result.failure.message}`);
    preload = false;
    const step = measureStep(i, { ...m, targetRate: rate, clientCores: clientCores(engine, plan) }, settings.slo, window);
    const latencyOnly = step.failedOn.length > 0 && step.failedOn.every((k) => k === 'latency');
    // A step the client's own lag broke measured the machine: asked again even with --no-retry (not a bound tighter
    // than the client's send timing: that is the same at any try).
    const lagged = step.clientLagBrokeSlo && step.clientLag?.tighterThanSendsUs === undefined;
    step.retried = lagged ? tries < LAG_RETRY : !step.clientLagBrokeSlo && settings.retry && tries < RETRY && latencyOnly;
    report.steps.push(step);
    assignLimits(report.steps, window);
    hooks.onStep?.(step);
    if (step.retried) {
      tries++;
      continue;
    }
    tries = 0;
    search.record(rate, step.met);
  }
  return finish(search.end() ?? 'steps', search);
}
