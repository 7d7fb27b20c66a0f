/**
 * `-x/--repeat N`: the same run N times, one after another, as one result —
 * counters and histograms added, elapsed summed (so ops/s is over the
 * rounds' measured time), each round's series after the one before — with
 * each round's figures kept (`rounds`, what compare takes its noise from)
 * and their mean ± sd (`repeat`).
 */
import { addedCounters } from './added-counters.js';
import { addHistogramData } from './buckets.js';
import type { HistogramData } from './engine-js/histogram.js';
import type { Plan, RawInterval, RawResult } from './engine-js/plan.js';
import type { RoundFigures } from './compare/figures.js';
import { finishResult, type RunResult } from './run.js';

export interface MeanSd {
  mean: number;
  sd: number;
}

/** What -x adds to the result: the rounds and, per command (and Totals), the mean ± sd of ops/s and each percentile. */
export interface RepeatSummary {
  rounds: number;
  perCommand: { command: string; opsPerSec: MeanSd; percentilesUs: Record<string, MeanSd> }[];
}

export function meanSd(values: number[]): MeanSd {
  const n = values.length;
  const mean = n > 0 ? values.reduce((s, v) => s + v, 0) / n : 0;
  // The sample standard deviation (n − 1): the rounds are a sample of the runs one could make.
  const sd = n > 1 ? Math.sqrt(values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1)) : 0;
  return { mean, sd };
}

function add(a: HistogramData | null | undefined, b: HistogramData | null | undefined): HistogramData | undefined {
  if (!a) return b ?? undefined;
  if (!b) return a;
  return addHistogramData(a, b);
}

/** The rounds as one result (the first round's Plan, which every round ran). */
export function combineRounds(plan: Plan, runs: RunResult[], percentiles?: readonly number[]): RunResult & { rounds: RoundFigures[]; repeat: RepeatSummary } {
  const sum = (f: (r: RunResult) => number | undefined) => runs.reduce((n, r) => n + (f(r) ?? 0), 0);
  let offsetNs = 0;
  let index = 0;
  const intervals: RawInterval[] = [];
  for (const r of runs) {
    for (const i of r.intervals ?? []) intervals.push({ ...i, index: index + i.index, startNs: i.startNs + offsetNs, endNs: i.endNs + offsetNs });
    index = intervals.length === 0 ? 0 : intervals[intervals.length - 1].index + 1;
    offsetNs += r.elapsedNs;
  }
  const first = runs[0];
  const raw: RawResult = {
    ...first,
    ...addedCounters(runs),
    elapsedNs: sum((r) => r.elapsedNs),
    histogram: runs.reduce<HistogramData | undefined>((h, r) => add(h, r.histogram), undefined)!,
    setHistogram: runs.reduce<HistogramData | undefined>((h, r) => add(h, r.setHistogram), undefined),
    getHistogram: runs.reduce<HistogramData | undefined>((h, r) => add(h, r.getHistogram), undefined),
    ...(first.commandHistograms ? { commandHistograms: first.commandHistograms.map((_, k) => runs.reduce<HistogramData | undefined>((h, r) => add(h, r.commandHistograms?.[k]), undefined)!) } : {}),
    serviceHistogram: runs.every((r) => r.serviceHistogram) ? runs.reduce<HistogramData | undefined>((h, r) => add(h, r.serviceHistogram), undefined)! : null,
    scheduleLagHistogram: runs.every((r) => r.scheduleLagHistogram) ? runs.reduce<HistogramData | undefined>((h, r) => add(h, r.scheduleLagHistogram), undefined)! : null,
    firstError: runs.find((r) => r.firstError)?.firstError ?? null,
    firstMismatch: runs.find((r) => r.firstMismatch)?.firstMismatch ?? null,
    failure: runs.find((r) => r.failure)?.failure ?? null,
    intervals,
  };
  const result = finishResult(plan, raw, percentiles);
  const rounds: RoundFigures[] = runs.map((r) => ({ perCommand: r.perCommand.map((c) => ({ command: c.command, opsPerSec: c.opsPerSec, percentilesUs: c.percentilesUs })) }));
  const repeat: RepeatSummary = {
    rounds: runs.length,
    perCommand: result.perCommand.map((row) => {
      const of = runs.map((r) => r.perCommand.find((c) => c.command === row.command));
      const percentilesUs: Record<string, MeanSd> = {};
      for (const key of Object.keys(row.percentilesUs)) percentilesUs[key] = meanSd(of.map((c) => c?.percentilesUs[key] ?? 0));
      return { command: row.command, opsPerSec: meanSd(of.map((c) => c?.opsPerSec ?? 0)), percentilesUs };
    }),
  };
  // Complete when every round was (finishResult counts the requests of one round's Plan).
  return { ...result, complete: runs.every((r) => r.complete), rounds, repeat };
}

/** The human line under the figures: the rounds' mean ± sd for Totals. */
export function repeatLine(r: { repeat?: RepeatSummary }): string | null {
  const s = r.repeat;
  if (!s) return null;
  const totals = s.perCommand[s.perCommand.length - 1];
  const pm = (m: MeanSd, digits: number) => `${m.mean.toFixed(digits)} ± ${m.sd.toFixed(digits)}`;
  const ps = Object.entries(totals.percentilesUs).map(([k, m]) => `${k} ${pm(m, 1)}`);
  return `-x ${s.rounds} rounds (figures above: all rounds' requests, histograms merged); per round, mean ± sd: ops/s ${pm(totals.opsPerSec, 1)} · ${ps.join(' · ')} us`;
}
