/**
 * Two results side by side: are their workloads the same (refused when
 * they differ in what makes a comparison meaningless, warned for lesser
 * differences), and per row and figure NEW as a percentage of BASE with a
 * verdict — better, worse, or within noise — from the noise the results'
 * own data shows (noise.ts).
 */
import { printable } from '../printable.js';
import { redactSecrets } from '../secrets.js';
import { UsageError } from '../usage-error.js';
import type { Comparable } from './figures.js';
import { CONFIDENCE, ratioIntervals, RESAMPLES, unitCount, type NoiseInterval } from './noise.js';

export type Verdict = 'better' | 'worse' | 'within noise' | 'no noise estimate';

export interface FigureComparison {
  row: string;
  /** `ops` or a percentile (`p99`). */
  figure: string;
  base: number;
  next: number;
  /** NEW as a percentage of BASE (null when BASE is 0). */
  percent: number | null;
  /** The 95% interval of that percentage from the noise, null when there is no estimate. */
  interval: [number, number] | null;
  verdict: Verdict;
}

export interface Comparison {
  base: Comparable;
  next: Comparable;
  warnings: string[];
  /** Which test gave the noise, in words. */
  noise: string;
  figures: FigureComparison[];
}

/** Plan fields that make two results different workloads: comparing them says nothing. */
const WORKLOAD_FIELDS = ['mode', 'setCmd', 'getCmd', 'commands', 'literalCommands', 'setRatio', 'valueSizeMin', 'valueSizeMax', 'slo'];
/** Plan fields that are one run's share or its own business, never a difference. */
const NOT_COMPARED = new Set(['clientIndex', 'clientCount', 'cpus', 'password']);

function shown(v: unknown): string {
  return printable(JSON.stringify(v ?? null));
}

/** Refuses (a usage error naming every field) results whose workloads differ; returns the warnings for lesser differences. */
export function checkWorkloads(base: Comparable, next: Comparable): string[] {
  const names = `${printable(base.file)} (BASE) and ${printable(next.file)} (NEW)`;
  if (base.kind !== next.kind) throw new UsageError(`${names} are different kinds of result (${base.kind} vs ${next.kind}): compare a ${base.kind} with a ${base.kind}`);
  const differ: string[] = [];
  // Files are input: a hand-edited plan may hold a password anywhere (a secret field, a URI); none is printed.
  const bp = redactSecrets(base.plan ?? {});
  const np = redactSecrets(next.plan ?? {});
  for (const k of WORKLOAD_FIELDS) if (JSON.stringify(bp[k] ?? null) !== JSON.stringify(np[k] ?? null)) differ.push(`${k} ${shown(bp[k])} vs ${shown(np[k])}`);
  const rowsOf = (c: Comparable) => c.rows.map((r) => r.name).join(', ');
  if (rowsOf(base) !== rowsOf(next)) differ.push(`rows ${shown(rowsOf(base))} vs ${shown(rowsOf(next))}`);
  if (differ.length > 0) throw new UsageError(`${names} ran different workloads (${differ.join('; ')}): their figures do not compare`);
  const warnings: string[] = [];
  const keys = new Set([...Object.keys(bp), ...Object.keys(np)]);
  for (const k of keys) {
    if (WORKLOAD_FIELDS.includes(k) || NOT_COMPARED.has(k)) continue;
    if (JSON.stringify(bp[k] ?? null) !== JSON.stringify(np[k] ?? null)) warnings.push(`${k} differs: ${shown(bp[k])} (BASE) vs ${shown(np[k])} (NEW)`);
  }
  if (base.engine !== next.engine) warnings.push(`engine differs: ${shown(base.engine)} (BASE) vs ${shown(next.engine)} (NEW)`);
  if (base.hostname !== next.hostname) warnings.push(`load machine differs: ${shown(base.hostname)} (BASE) vs ${shown(next.hostname)} (NEW)`);
  return warnings;
}

/** Which way is better: more ops/s, less latency. */
function higherIsBetter(figure: string): boolean {
  return figure === 'ops';
}

/**
 * A change in ops/s smaller than this either way is within noise whatever its interval (criterion.rs's noise
 * threshold): two runs of a server held to an exact rate differ by a tenth of a percent with a still tighter
 * interval, and no one decides on that.
 */
export const NOISE_FLOOR = 0.01;

/**
 * The same for a latency percentile. Two `-x 3` results of one rate-held server on this 2-core machine had
 * their p50 3.6% apart with a 95% interval of 101.7-105.3% (their ops/s 0.2% apart): the rounds of one
 * result run back to back, so a drift of the machine or the server's timers between the two results is no
 * part of either's spread, and percentiles move with it more than throughput does.
 */
export const LATENCY_NOISE_FLOOR = 0.05;

function verdictOf(figure: string, interval: NoiseInterval | null, ratio: number | null): Verdict {
  if (!interval) return 'no noise estimate';
  if (interval.low <= 1 && interval.high >= 1) return 'within noise';
  if (ratio !== null && Math.abs(ratio - 1) < (higherIsBetter(figure) ? NOISE_FLOOR : LATENCY_NOISE_FLOOR)) return 'within noise';
  const up = interval.low > 1;
  return up === higherIsBetter(figure) ? 'better' : 'worse';
}

/** The figures both results have, in BASE's order. */
function sharedFigures(base: Comparable, next: Comparable, row: number): string[] {
  return Object.keys(base.rows[row].figures).filter((f) => f in next.rows[row].figures && Number.isFinite(base.rows[row].figures[f]) && Number.isFinite(next.rows[row].figures[f]));
}

function noiseText(base: Comparable, next: Comparable): string {
  if (base.kind === 'capacity') return "the searches' brackets (the highest rate that met the SLO .. the lowest that failed): NEW is better or worse only outside BASE's bracket";
  const b = base.rows[0]?.units;
  const n = next.rows[0]?.units;
  if (!b || !n || b.kind !== n.kind) return 'none: a result without rounds or recorded intervals (no verdict beyond the ratio)';
  const count = `BASE ${unitCount(b)}, NEW ${unitCount(n)}`;
  const what =
    b.kind === 'rounds'
      ? `Welch's t-test over the rounds (${count}; the difference of the rounds' mean figures)`
      : `block bootstrap over the recorded intervals (${count}; each interval's requests and latency histogram drawn whole), ${RESAMPLES} resamples`;
  return `${what}, ${CONFIDENCE * 100}% interval of NEW/BASE; within noise when it holds 100%`;
}

/** BASE and NEW compared figure by figure (checkWorkloads first). */
export function compareResults(base: Comparable, next: Comparable): Comparison {
  const warnings = checkWorkloads(base, next);
  const figures: FigureComparison[] = [];
  base.rows.forEach((row, k) => {
    const other = next.rows[k];
    const names = sharedFigures(base, next, k);
    let intervals: Record<string, NoiseInterval> | null = null;
    if (base.kind === 'capacity' && base.bracket && next.bracket) {
      intervals = { ops: bracketInterval(base.bracket, next.rows[k].figures.ops, base.rows[k].figures.ops) };
    } else if (row.units && other.units && row.units.kind === other.units.kind) {
      intervals = ratioIntervals(row.units, other.units, names.filter((f) => row.units!.kind === 'intervals' || f in (row.units as { values: Record<string, number>[] }).values[0]));
    }
    for (const f of names) {
      const b = row.figures[f];
      const n = other.figures[f];
      const interval = intervals?.[f] ?? null;
      figures.push({ row: row.name, figure: f, base: b, next: n, percent: b !== 0 ? (n / b) * 100 : null, interval: interval ? [interval.low * 100, interval.high * 100] : null, verdict: verdictOf(f, interval, b !== 0 ? n / b : null) });
    }
  });
  return { base, next, warnings, noise: noiseText(base, next), figures };
}

/** A capacity NEW/BASE interval: within BASE's bracket (met..failed) is noise. */
function bracketInterval(bracket: { met: number | null; failed: number | null }, next: number, base: number): NoiseInterval {
  const low = bracket.met ?? base;
  const high = bracket.failed ?? base;
  // The ratio NEW/BASE is within noise when NEW lies in BASE's bracket: the interval is next/high .. next/low around 1.
  return { low: next / high, high: next / low };
}
