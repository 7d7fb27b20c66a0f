/**
 * A study's summary latency: the rounds' histograms merged (they merge by
 * adding counts, whichever engine recorded them), then read as percentiles,
 * so a scenario's p99 is the p99 of all its requests, not a mean of the
 * rounds' p99s. Given to the report's summarize, which knows no layout.
 */
import type { HistogramData, LatencyUs } from '@respbench/report';
import { LatencyHistogram, type HistogramData as EngineHistogramData } from '../engine-js/histogram.js';
import { percentilesUsOf, summaryUs } from '../run.js';

export function mergeLatency(histograms: HistogramData[]): LatencyUs {
  const merged = new LatencyHistogram();
  for (const h of histograms) merged.merge(LatencyHistogram.fromData(h as EngineHistogramData));
  return summaryUs(merged.toData());
}

/** The study's chosen percentiles of several histograms merged, keyed `p50`, `p99.99` (RunResult.percentilesUs's keys). */
export function mergePercentiles(histograms: HistogramData[], percentiles: readonly number[]): Record<string, number> {
  const merged = new LatencyHistogram();
  for (const h of histograms) merged.merge(LatencyHistogram.fromData(h as EngineHistogramData));
  return percentilesUsOf(merged.toData(), percentiles);
}
