/**
 * One step of a capacity search: a run at a target rate, what it achieved,
 * whether it met the SLO and, when it did not, whether the client or the
 * server was what held it back.
 */
import { LatencyHistogram } from '../engine-js/histogram.js';
import type { RunResult } from '../run.js';
import { formatShare, formatUs, type Slo } from './slo.js';

/** A step must achieve at least this share of its target rate. */
export const RATE_KEPT_SHARE = 0.95;
/** The client is busy when it used this share of the CPU it can use (or more). */
export const CLIENT_CPU_BUSY = 0.9;
/**
 * The JS engine's event loop is a limit when its delay p99 is at least 1 ms
 * and this share of the latency that broke the SLO.
 */
export const LOOP_DELAY_SHARE = 0.25;
/**
 * A client whose requests went out late while it used less than this share
 * of its CPU was held back (descheduled: the machine), not busy.
 */
export const HELD_BACK_CPU = 0.5;
/** The stall meter saw the machine hold its sleeper back past a bound for at least this share of a step. */
export const MACHINE_SEEN_SHARE = 0.001;
/** The server queued when the mean service time grew this much over the least loaded step's. */
export const SERVICE_GROWTH = 1.5;
/** The window is the limit when the target is this much above what it carries at the low-load service time. */
export const WINDOW_MARGIN = 0.05;
/**
 * A step's window was full (requests waited for replies, so their schedule
 * lag is the server's doing) when it achieved this share of what its
 * requests in flight carry at the step's own mean service time.
 */
export const WINDOW_SATURATED = 0.8;

export type Limit = 'client' | 'server';

/** What a run holds in flight at most: -c × -P, times the primaries under --cluster (a window per primary). */
export interface Window {
  connections: number;
  pipeline: number;
  /** --cluster: the primaries (each connection has a socket, and a window, per primary); 1 without. */
  primaries?: number;
}

export function rateKept(achievedRate: number, targetRate: number): boolean {
  return achievedRate >= RATE_KEPT_SHARE * targetRate;
}

export interface CapacityStep {
  /** 1, 2, … in the order run. */
  step: number;
  targetRate: number;
  /** Requests answered per second of the measured phase. */
  achievedRate: number;
  requests: number;
  errors: number;
  /** Intended-time latency (from when each request was due), us. */
  latencyUs: { p50: number; p99: number; p999: number; max: number };
  /** Each SLO percentile's value, us, keyed by its name (`p99.9`). */
  sloLatencyUs: Record<string, number>;
  /** Latency from the actual send, mean and p50, us (null when the engine gave none). */
  serviceUs: { mean: number; p50: number; p99: number } | null;
  /** How late requests went out against the schedule, p99 us (a full window or a late client). */
  scheduleLagP99Us: number | null;
  /** The JS engine's event-loop delay p99, us; null for the native engine. */
  eventLoopDelayP99Us: number | null;
  /**
   * Failed on latency, and the client's own lag (schedule lag p99, or the JS
   * event loop's delay p99) alone is past the SLO's tightest latency bound,
   * while the window was not what kept requests back (it carried less than
   * WINDOW_SATURATED of what it can at this step's service time): the
   * requests could not have met the SLO whatever the server did. The step
   * says nothing of the server (the client or the machine fell behind).
   */
  clientLagBrokeSlo: boolean;
  /** What says so (null when nothing did): the stalls, what measured them and the bound they decided (stallVerdict). */
  clientLag: StallVerdict | null;
  /** Per SLO latency bound (the SLO's order): the share of the step a sleeping thread of the client was later than it (machine-stalls.ts); null when not measured. */
  machineLate: number[] | null;
  /** The client process's CPU over the step, as a share of what it can use (1 = all of it). */
  clientCpu: number;
  /** Cores the engine can use: 1 for JS, the threads for native (at most the machine's). */
  clientCores: number;
  met: boolean;
  /** Why it did not meet the SLO (empty when it did). */
  failedBecause: string[];
  /** The same, as kinds. */
  failedOn: ('latency' | 'errors' | 'rate' | 'no-reply')[];
  /** The first error reply, when there was one. */
  firstError: string | null;
  /**
   * True when this step failed on latency alone (its rate kept, errors
   * within the bound) and was run again: the search went by the repeat, the
   * next step.
   */
  retried: boolean;
  /** When it did not: which side held it back, and the figures that say so. */
  limit: Limit | null;
  limitReason: string | null;
  /**
   * The limit is the client's, held back by the machine (late with its CPU
   * mostly idle, decideLimit), not its CPU or window: like
   * clientLagBrokeSlo, the step says nothing of the server.
   */
  heldBack: boolean;
}

/** The figures of one run the verdict reads, beside the run itself. */
export interface StepMeasure {
  result: RunResult;
  targetRate: number;
  /** process.cpuUsage() over the run, us of CPU (user + system), and its wall time, us. */
  cpuUs: number;
  wallUs: number;
  clientCores: number;
  /** Per SLO latency bound (Slo.latency order): the share of the run a sleeping thread was later than it (stallShares); null when not measured. */
  machineLate?: number[] | null;
}

function pct(data: RunResult['histogram'], p: number): number {
  return Math.round(LatencyHistogram.fromData(data).valueAtPercentile(p)) / 1000;
}

/** Why a failed step was the client's (or the machine's) stalls, not the server. */
export interface StallVerdict {
  /** What measured them: the engine's schedule lag, a sleeping thread of the client (machine-stalls.ts), or the JS event loop's delay. */
  by: 'schedule lag' | 'machine' | 'event loop';
  /** The SLO bound they decided: p`percentile` <= `boundUs`. */
  percentile: number;
  boundUs: number;
  /** Share of sends later than the bound (schedule lag), of the step's time a sleeper was (machine); the delay's p99, us (event loop). */
  figure: number;
  /** The bound's percentile of the requests the stalls did not delay, us (null: not computed, the stalls alone broke it). */
  withoutUs: number | null;
  /**
   * A bound under a millisecond that half the sends missed on their own, by less than a millisecond (the median send
   * lateness, us): the SLO is tighter than the client can time its sends, at any rate, rather than the client stalled.
   */
  tighterThanSendsUs?: number;
}

/** Below this bound (us), a client's own send timing (thread wake-ups, tens to hundreds of us) can decide it. */
const TIMING_BOUND_US = 1000;

/** Share (0..1) of a histogram's values above `ns`, found through its percentiles. */
function shareAbove(h: LatencyHistogram, ns: number): number {
  if (h.total === 0 || h.max() <= ns) return 0;
  let below = 0;
  let above = 100;
  for (let i = 0; i < 32; i++) {
    const mid = (below + above) / 2;
    if (h.valueAtPercentile(mid) <= ns) below = mid;
    else above = mid;
  }
  return (100 - below) / 100;
}

/**
 * Whether the client's (or the machine's) stalls decided a failed step,
 * not the server. Under --rate requests are due evenly in time, so a stall
 * (the client descheduled by a busy machine, a GC, a busy event loop)
 * delays the sends due during it, each by what is left of it (the schedule
 * lag), and as many replies: those that arrive during it are read when it
 * ends, as late. So if a share s of sends went out later than a bound b,
 * about 2s of the requests were later than b by the client's doing; a
 * thread that only sleeps (machine-stalls.ts), late past b for a share s of
 * the step, says the same of the machine, even when a starved server has
 * filled the window (which makes the lag the server's). The step is the
 * stalls' when, without those 2s of requests (the latest), the rest met
 * the bound: their percentile N, the latency's p(N × (1 − 2s)), is within b.
 * (Counting the sends alone, or asking the lag alone to break the bound,
 * let a machine that held the client back pass as a slow server.) A server
 * the machine starved queues more than 2s of the requests behind its
 * stalls, so a step is also the machine's when the sleeper's 2s reaches
 * the bound's whole budget, (100 − N)%, whatever its latencies or its rate.
 */
function stallVerdict(r: RunResult, slo: Slo, sloLatencyUs: Record<string, number>, failedOn: CapacityStep['failedOn'], saturated: boolean, machine: number[] | null | undefined): StallVerdict | null {
  const onLatency = failedOn.includes('latency');
  if (!onLatency && !failedOn.includes('rate')) return null;
  const latency = r.requests > 0 ? LatencyHistogram.fromData(r.histogram) : null;
  const lag = r.scheduleLagHistogram && r.requests > 0 && !saturated ? LatencyHistogram.fromData(r.scheduleLagHistogram) : null;
  for (let i = 0; i < slo.latency.length; i++) {
    const c = slo.latency[i];
    const boundUs = c.maxUs;
    const sends = onLatency && lag !== null ? shareAbove(lag, boundUs * 1000) : 0;
    const sleeper = machine?.[i] ?? 0;
    const by = sends >= sleeper ? 'schedule lag' : 'machine';
    const share = Math.max(sends, sleeper);
    if (share <= 0) continue;
    const figure = Math.round(share * 1e5) / 1e5;
    if (onLatency && latency !== null && sloLatencyUs[c.name] > boundUs) {
      const rest = c.percentile * (1 - 2 * share);
      // None left that the stalls did not delay: they alone broke it.
      if (rest <= 0) {
        const medianLateUs = lag !== null ? Math.round(lag.valueAtPercentile(50)) / 1000 : 0;
        // Sends late by a millisecond or more are stalls (the machine, a busy client), not the client's timing.
        const tight = by === 'schedule lag' && boundUs < TIMING_BOUND_US && medianLateUs > boundUs && medianLateUs < TIMING_BOUND_US ? { tighterThanSendsUs: medianLateUs } : {};
        return { by, percentile: c.percentile, boundUs, figure, withoutUs: null, ...tight };
      }
      const withoutUs = Math.round(latency.valueAtPercentile(rest)) / 1000;
      if (withoutUs <= boundUs) return { by, percentile: c.percentile, boundUs, figure, withoutUs };
    }
    // A starved server falls behind and queues everything after a stall, more than 2s of the requests: a machine that
    // held threads back past the bound for half its budget or more decided the step, whatever the latencies say.
    if ((onLatency ? sloLatencyUs[c.name] > boundUs : true) && 2 * sleeper * 100 >= 100 - c.percentile) {
      return { by: 'machine', percentile: c.percentile, boundUs, figure: Math.round(sleeper * 1e5) / 1e5, withoutUs: null };
    }
  }
  // The JS event loop's delay samples a timer, not each request: its p99 past the bound still says the loop could not keep it.
  const loopP99 = r.clientLag.eventLoopDelayUs?.p99 ?? null;
  const bound = Math.min(...slo.latency.map((c) => c.maxUs));
  if (onLatency && !saturated && loopP99 !== null && loopP99 > bound) return { by: 'event loop', percentile: 99, boundUs: bound, figure: loopP99, withoutUs: null };
  return null;
}

/** Requests a run holds in flight at most. */
function inFlightOf(window: Window): number {
  return window.connections * window.pipeline * (window.primaries ?? 1);
}

/** The step's figures and whether it met the SLO; the limit is decided with the other steps (decideLimit). */
export function measureStep(step: number, m: StepMeasure, slo: Slo, window: Window | null = null): CapacityStep {
  const r = m.result;
  const sloLatencyUs: Record<string, number> = {};
  for (const c of slo.latency) sloLatencyUs[c.name] = r.requests > 0 ? pct(r.histogram, c.percentile) : 0;
  const failedBecause: string[] = [];
  const failedOn: CapacityStep['failedOn'] = [];
  const fail = (kind: CapacityStep['failedOn'][number], text: string) => {
    failedBecause.push(text);
    if (!failedOn.includes(kind)) failedOn.push(kind);
  };
  for (const c of slo.latency) {
    if (sloLatencyUs[c.name] > c.maxUs) fail('latency', `${c.name} ${formatUs(sloLatencyUs[c.name])} > ${formatUs(c.maxUs)}`);
  }
  const share = r.requests > 0 ? r.errors / r.requests : 0;
  if (share > slo.maxErrorShare) fail('errors', `errors ${formatShare(share)} > ${formatShare(slo.maxErrorShare)}`);
  const achievedRate = r.opsPerSec;
  if (!rateKept(achievedRate, m.targetRate)) {
    fail('rate', `achieved ${Math.round(achievedRate)}/s, ${Math.round((achievedRate / m.targetRate) * 100)}% of the target`);
  }
  if (r.requests === 0) fail('no-reply', 'no reply');
  const service = r.serviceHistogram && r.requests > 0 ? LatencyHistogram.fromData(r.serviceHistogram) : null;
  // A full window makes requests late too: then the lag is the server's (it did not answer), not the client's.
  const serviceMeanUs = service ? service.mean() / 1000 : 0;
  const saturated = window !== null && serviceMeanUs > 0 && achievedRate >= (WINDOW_SATURATED * inFlightOf(window) * 1e6) / serviceMeanUs;
  const clientLag = stallVerdict(r, slo, sloLatencyUs, failedOn, saturated, m.machineLate);
  return {
    clientLagBrokeSlo: clientLag !== null,
    clientLag,
    machineLate: m.machineLate ? m.machineLate.map((x) => Math.round(x * 1e5) / 1e5) : null,
    step,
    targetRate: m.targetRate,
    achievedRate: Math.round(achievedRate * 10) / 10,
    requests: r.requests,
    errors: r.errors,
    latencyUs: { p50: r.latencyUs.p50, p99: r.latencyUs.p99, p999: r.latencyUs.p999, max: r.latencyUs.max },
    sloLatencyUs,
    serviceUs: service ? { mean: Math.round(service.mean()) / 1000, p50: Math.round(service.valueAtPercentile(50)) / 1000, p99: Math.round(service.valueAtPercentile(99)) / 1000 } : null,
    scheduleLagP99Us: r.clientLag.scheduleLagUs?.p99 ?? null,
    eventLoopDelayP99Us: r.clientLag.eventLoopDelayUs?.p99 ?? null,
    clientCpu: m.wallUs > 0 ? Math.round((m.cpuUs / m.wallUs / m.clientCores) * 1000) / 1000 : 0,
    clientCores: m.clientCores,
    met: failedBecause.length === 0,
    failedBecause,
    failedOn,
    firstError: r.firstError ?? null,
    retried: false,
    limit: null,
    limitReason: null,
    heldBack: false,
  };
}

/** The step the bracket's failed rate rests on: the last run at that rate (not one that was run again), which failed. */
export function boundStep(steps: CapacityStep[], bracket: { failed: number | null }): CapacityStep | undefined {
  return bracket.failed === null ? undefined : steps.find((x) => x.targetRate === bracket.failed && !x.met && !x.retried);
}

/** What the stalls were and why they, not the server, decided the step, in words. */
function stallsText(v: StallVerdict): string {
  const bound = `p${v.percentile} <= ${formatUs(v.boundUs)}`;
  if (v.tighterThanSendsUs !== undefined) {
    return `${bound} is tighter than the client can time its sends: half of them went out more than ${formatUs(v.tighterThanSendsUs)} late (its own wake-ups), so no rate can meet it; loosen --slo`;
  }
  if (v.by === 'event loop') return `the client's own JS event loop's delay (p99 ${formatUs(v.figure)}) alone broke the SLO`;
  const what = v.by === 'schedule lag' ? `${formatShare(v.figure)} of the requests went out more than ${formatUs(v.boundUs)} late` : `a sleeping thread of the client woke more than ${formatUs(v.boundUs)} late for ${formatShare(v.figure)} of the step (the machine held its threads back; a server on it too)`;
  const rest = v.withoutUs === null ? `which alone is past what ${bound} allows` : `and as many replies were read as late; the other requests met ${bound} (${formatUs(v.withoutUs)})`;
  return `the client's own stalls broke the SLO: ${what}, ${rest}`;
}

/**
 * Who held a failed step back. In order: a client that used (nearly) all
 * the CPU it can, or whose event loop ran late by a good part of the
 * latency, is the limit; so is a window (connections × pipeline) that
 * could not carry the rate even at the service time (reply − actual send)
 * of the least loaded step. Otherwise the service time tells: when it grew
 * well over the least loaded step's, requests queued at the server, which
 * is the limit; when it did not, either the requests went out late (the
 * schedule lag says how late: the client) or they went out on time and the
 * server's own latency broke the SLO.
 *
 * `baselineServiceMeanUs`: the mean service time of the least loaded step
 * (null when no step measured one).
 */
export function decideLimit(s: CapacityStep, baselineServiceMeanUs: number | null, window: Window): { limit: Limit; reason: string; heldBack?: boolean } {
  const cpu = Math.round(s.clientCpu * 100);
  // Error replies past the SLO's share are the server's answer at this rate whatever else went on; a rate missed
  // beside them (a short step's few requests on a busy machine) does not make them the client's.
  if (s.failedOn.includes('errors') && s.failedOn.every((k) => k === 'errors' || k === 'rate')) {
    return { limit: 'server', reason: `it answered ${s.errors} request${s.errors === 1 ? '' : 's'} with error replies${s.firstError ? ` (first: ${s.firstError})` : ''}` };
  }
  if (s.clientLagBrokeSlo && s.clientLag) {
    // Before the service time: a descheduled client reads its replies late too, which looks like a server queue.
    const why = s.clientLag.tighterThanSendsUs !== undefined ? 'not the server' : 'the client or the machine it runs on fell behind, not the server';
    return { limit: 'client', reason: `${stallsText(s.clientLag)}: ${why}; client CPU ${cpu}%` };
  }
  if (s.clientCpu >= CLIENT_CPU_BUSY) {
    return { limit: 'client', reason: `the client used ${cpu}% of the CPU it can use (${s.clientCores} core${s.clientCores === 1 ? '' : 's'})` };
  }
  const worstUs = Math.max(s.latencyUs.p99, ...Object.values(s.sloLatencyUs));
  const loop = s.eventLoopDelayP99Us;
  if (loop !== null && loop >= 1000 && loop >= LOOP_DELAY_SHARE * worstUs) {
    return { limit: 'client', reason: `the JS engine's event loop ran up to ${formatUs(loop)} late (p99), CPU ${cpu}%` };
  }
  const service = s.serviceUs;
  if (service && baselineServiceMeanUs !== null && baselineServiceMeanUs > 0) {
    const from = `service time (reply − actual send) mean ${formatUs(baselineServiceMeanUs)} at the least loaded step, ${formatUs(service.mean)} here`;
    // Even at the service time of low load, c × P in flight carry at most this many per second.
    const primaries = window.primaries ?? 1;
    const inFlight = inFlightOf(window);
    const shape = `-c ${window.connections} × -P ${window.pipeline}${primaries > 1 ? ` × ${primaries} primaries` : ''}`;
    const windowRate = (inFlight / baselineServiceMeanUs) * 1e6;
    if (windowRate * (1 + WINDOW_MARGIN) < s.targetRate) {
      return {
        limit: 'client',
        reason: `its window of ${inFlight} request${inFlight === 1 ? '' : 's'} in flight (${shape}) at ${formatUs(baselineServiceMeanUs)} each (the server's time at low load) carries at most about ${Math.round(windowRate)}/s: raise -c or -P; client CPU ${cpu}%`,
      };
    }
    if (service.mean >= SERVICE_GROWTH * baselineServiceMeanUs) return { limit: 'server', reason: `requests queued at the server: ${from}; client CPU ${cpu}%` };
    // The server did not queue, but the window was full: at this step's own service time it could not carry the rate,
    // or it was kept busy (Little's law: achieved × service time ÷ in flight) while requests were due. The rest waited
    // in the client: a schedule lag that is the window's, not a stall's.
    const stepWindowRate = (inFlight / service.mean) * 1e6;
    const busy = s.achievedRate / stepWindowRate;
    if (stepWindowRate * (1 + WINDOW_MARGIN) < s.targetRate || busy >= WINDOW_SATURATED) {
      return {
        limit: 'client',
        reason: `its window of ${inFlight} request${inFlight === 1 ? '' : 's'} in flight (${shape}) was full: at ${formatUs(service.mean)} each (this step's service time, ${formatUs(baselineServiceMeanUs)} at the least loaded step) it carries at most about ${Math.round(stepWindowRate)}/s, ${Math.round(busy * 100)}% of it used: raise -c or -P; client CPU ${cpu}%`,
      };
    }
    const lag = s.scheduleLagP99Us;
    if (lag !== null && lag >= LOOP_DELAY_SHARE * worstUs) {
      // Late with the CPU mostly idle: the client was held off it (the machine), not busy with its own work — when the
      // stall meter saw the machine hold a sleeper back past a bound, or there is no meter to ask. A meter that saw a
      // quiet machine says the idle client was waiting on something else: replies (the server), not the CPU.
      const idle = s.clientCpu < HELD_BACK_CPU;
      const machineSaw = s.machineLate === null || s.machineLate.some((share) => share >= MACHINE_SEEN_SHARE);
      if (!idle || machineSaw) {
        const why = idle ? `: the client, idle most of the step, was held back by the machine, so the step says nothing of the server` : '';
        return { limit: 'client', reason: `requests went out late (schedule lag p99 ${formatUs(lag)}) while the server answered as fast as at low load (${from}); client CPU ${cpu}%${why}`, heldBack: idle };
      }
      return { limit: 'server', reason: `requests went out late (schedule lag p99 ${formatUs(lag)}) with the client idle (CPU ${cpu}%) and the machine quiet (a sleeping thread of the client was never held back past the SLO's bounds): they waited for replies; service p99 ${formatUs(service.p99)}` };
    }
    return { limit: 'server', reason: `the server's own latency broke the SLO (service p99 ${formatUs(service.p99)}), with requests sent on time; client CPU ${cpu}%` };
  }
  return { limit: 'server', reason: `the client was not busy (CPU ${cpu}%${loop === null ? '' : `, event-loop delay p99 ${formatUs(loop)}`})` };
}
