/**
 * The latency percentiles a study's tables and CSVs show: the ones the user
 * chose (`--percentiles` / `percentiles:`), or the columns they always had.
 * Figures are looked up in a `percentilesUs` map (keyed as the CLI's
 * RunResult.percentilesUs: `p50`, `p99.9`, `p99.99`), else in the fixed
 * LatencyUs fields, so rows from before the choice existed still read.
 */
import type { LatencyUs } from './rows.js';

/** The CSVs' percentile columns when the study chose none: p50_us, p90_us, p99_us, p999_us. */
export const DEFAULT_CSV_PERCENTILES: readonly number[] = [50, 90, 99, 99.9];
/** The HTML table's percentile columns when the study chose none (the Markdown table has none then). */
export const DEFAULT_TABLE_PERCENTILES: readonly number[] = [50, 99, 99.9];

/** The key a percentile goes by in a percentilesUs map: `p50`, `p99.9`, `p99.99` (as the CLI's). */
export function percentileKey(p: number): string {
  return `p${p}`;
}

/** How a table's header names a percentile: `p50`, `p99.9`. */
export const percentileLabel = percentileKey;

const FIXED: Record<string, keyof LatencyUs> = { p50: 'p50', p90: 'p90', p99: 'p99', 'p99.9': 'p999' };

/** The latency at percentile p, us: from `chosen` when it has p, else LatencyUs's own field; null when neither has it. */
export function latencyAt(l: LatencyUs | null | undefined, chosen: Record<string, number> | null | undefined, p: number): number | null {
  const key = percentileKey(p);
  if (chosen && key in chosen) return chosen[key];
  const field = FIXED[key];
  return l && field ? l[field] : null;
}

/**
 * The CSV column of each percentile: `p` and its digits, then `_us`
 * (`p50_us`, `p999_us` for 99.9, `p9999_us` for 99.99, as the columns have
 * always been named); should two percentiles give the same name (9.95 and
 * 99.5), every column keeps its dot (`p99.5_us`).
 */
export function percentileColumns(percentiles: readonly number[], prefix = ''): string[] {
  const plain = percentiles.map((p) => `${prefix}p${String(p).replace('.', '')}_us`);
  if (new Set(plain).size === plain.length) return plain;
  return percentiles.map((p) => `${prefix}p${p}_us`);
}
