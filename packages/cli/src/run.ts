/**
 * One run, end to end: an engine's RawResult turned into the RunResult users
 * read (throughput, avg us/op, latency percentiles) and the exit status it
 * deserves. Used by the CLI and by studies.
 */
import { EXIT } from './exit.js';
import { LatencyHistogram, type LatencySummary } from './engine-js/histogram.js';
import type { Engine, Plan, RawResult } from './engine-js/plan.js';
import type { RunOptions } from './engine-js/progress.js';

/**
 * What `--json` prints: the engine's RawResult with the figures derived from
 * it. Version 2 renamed `workload` (which held the Plan) to `plan`; other
 * field names are stable.
 */
export interface RunResult extends RawResult {
  /** The shape of this object: 2 since `workload` became `plan`. */
  version: typeof RUN_RESULT_VERSION;
  target: { host: string; port: number };
  /** The Plan the engine ran. */
  plan: Plan;
  elapsedSec: number;
  opsPerSec: number;
  /** elapsed / requests: the original tool's "avg us/op" (inverse throughput). */
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

export const RUN_RESULT_VERSION = 2;

export function finishResult(plan: Plan, raw: RawResult): RunResult {
  const elapsedSec = raw.elapsedNs / 1e9;
  const histogram = LatencyHistogram.fromData(raw.histogram);
  return {
    version: RUN_RESULT_VERSION,
    ...raw,
    lostWrites: raw.lostWrites ?? 0,
    pushes: raw.pushes ?? 0,
    warmupRequests: raw.warmupRequests ?? 0,
    warmupElapsedNs: raw.warmupElapsedNs ?? 0,
    serviceHistogram: raw.serviceHistogram ?? null,
    target: { host: plan.host, port: plan.port },
    plan,
    elapsedSec,
    opsPerSec: elapsedSec > 0 ? raw.requests / elapsedSec : 0,
    avgUsPerOp: raw.requests > 0 ? (elapsedSec * 1e6) / raw.requests : 0,
    latencyUs: histogram.summaryUs(),
    preloadElapsedSec: raw.preloadElapsedNs / 1e9,
    serviceUs: raw.serviceHistogram ? LatencyHistogram.fromData(raw.serviceHistogram).summaryUs() : null,
    rateKept: plan.rate > 0 && elapsedSec > 0 ? Math.abs(raw.requests / elapsedSec - plan.rate) <= plan.rate * 0.02 : null,
    complete: raw.failure === null && (plan.durationMs > 0 || raw.requests === plan.requests),
  };
}

export async function runPlan(engine: Engine, plan: Plan, options: RunOptions = {}): Promise<RunResult> {
  return finishResult(plan, await engine.run(plan, options));
}

/** Reads that found nothing where get mode with --verify-get expected a value. */
export function missingCountsAsVerifyFailure(result: RunResult): boolean {
  return result.plan.verifyGet && result.plan.mode === 'get' && result.misses > 0;
}

export function exitCodeFor(result: RunResult): number {
  if (result.failure) {
    if (result.failure.kind === 'interrupted') return EXIT.sigint;
    return EXIT.failed;
  }
  if (result.mismatches > 0 || result.lostWrites > 0 || missingCountsAsVerifyFailure(result)) return EXIT.verifyFailed;
  if (result.errors > 0) return EXIT.errorReplies;
  return EXIT.ok;
}
