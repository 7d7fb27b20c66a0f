/**
 * One run, end to end: an engine's RawResult turned into the RunResult users
 * read (throughput, avg us/op, latency percentiles) and the exit status it
 * deserves. Used by the CLI and by studies.
 */
import { EXIT } from './exit.js';
import { Histogram } from './histogram.js';
import type { Engine, Plan, RawResult, RunOptions, RunResult } from './plan.js';

export function finishResult(plan: Plan, raw: RawResult): RunResult {
  const elapsedSec = raw.elapsedNs / 1e9;
  const histogram = Histogram.fromData(raw.histogram);
  return {
    ...raw,
    warmupRequests: raw.warmupRequests ?? 0,
    warmupElapsedNs: raw.warmupElapsedNs ?? 0,
    serviceHistogram: raw.serviceHistogram ?? null,
    target: { host: plan.host, port: plan.port },
    workload: plan,
    elapsedSec,
    opsPerSec: elapsedSec > 0 ? raw.requests / elapsedSec : 0,
    avgUsPerOp: raw.requests > 0 ? (elapsedSec * 1e6) / raw.requests : 0,
    latencyUs: histogram.summaryUs(),
    preloadElapsedSec: raw.preloadElapsedNs / 1e9,
    serviceUs: raw.serviceHistogram ? Histogram.fromData(raw.serviceHistogram).summaryUs() : null,
    rateKept: plan.rate > 0 && elapsedSec > 0 ? Math.abs(raw.requests / elapsedSec - plan.rate) <= plan.rate * 0.02 : null,
    complete: raw.failure === null && (plan.durationMs > 0 || raw.requests === plan.requests),
  };
}

export async function runPlan(engine: Engine, plan: Plan, options: RunOptions = {}): Promise<RunResult> {
  return finishResult(plan, await engine.run(plan, options));
}

/** Reads that found nothing where get mode with --verify-get expected a value. */
export function missingCountsAsVerifyFailure(result: RunResult): boolean {
  return result.workload.verifyGet && result.workload.mode === 'get' && result.misses > 0;
}

export function exitCodeFor(result: RunResult): number {
  if (result.failure) {
    if (result.failure.kind === 'interrupted') return EXIT.sigint;
    return EXIT.failed;
  }
  if (result.mismatches > 0 || missingCountsAsVerifyFailure(result)) return EXIT.verifyFailed;
  if (result.errors > 0) return EXIT.errorReplies;
  return EXIT.ok;
}
