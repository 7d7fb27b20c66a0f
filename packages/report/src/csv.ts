/**
 * The detail CSV (one row per run) and the summary CSV (one row per scenario ×
 * mode). Column names are stable, snake_case, English whatever the report
 * language: scripts read them. Empty cells mean "no value" (a failed run has
 * no ops/s), never zero.
 */
import { stringify } from 'csv-stringify/sync';
import type { CommandSummary, SummaryRow } from './aggregate.js';
import { DEFAULT_CSV_PERCENTILES, latencyAt, percentileColumns } from './percentiles.js';
import type { LatencyUs, RunRow } from './rows.js';
import { scenarioLabel, shortRunReason } from './rows.js';

type Cell = string | number | boolean | null;

/** Rounds a figure for a CSV cell; keeps enough digits that means recomputed from it stay within rounding. */
function num(v: number | null | undefined, digits: number): Cell {
  if (v === null || v === undefined || !Number.isFinite(v)) return null;
  return Number(v.toFixed(digits));
}

const DETAIL_FIXED = [
  'group',
  'scenario',
  'label',
  'tags',
  'target',
  'mode',
  'round',
  'status',
  'error',
  'note',
  'ops_per_sec',
  'avg_us_per_op',
  'elapsed_s',
  // The percentile columns go here (detailColumns): p50_us, p90_us, p99_us, p999_us unless the study chose others.
  'max_us',
  'mean_latency_us',
  'answered',
  'ok',
  'errors',
  'misses',
  'mismatches',
  'engine',
  'started_at',
] as const;

/** Flag columns: the union of every row's flags, in the order first seen. */
function flagColumns(rows: RunRow[]): string[] {
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r.flags)) if (!cols.includes(k)) cols.push(k);
  return cols;
}

/** `percentiles`: the study's chosen ones (StudyInfo.percentiles); the columns they always were without. */
export function detailColumns(rows: RunRow[], percentiles: readonly number[] = DEFAULT_CSV_PERCENTILES): string[] {
  const at = DETAIL_FIXED.indexOf('max_us');
  return [...DETAIL_FIXED.slice(0, at), ...percentileColumns(percentiles), ...DETAIL_FIXED.slice(at), ...flagColumns(rows)];
}

export function detailCsv(rows: RunRow[], percentiles: readonly number[] = DEFAULT_CSV_PERCENTILES): string {
  const flags = flagColumns(rows);
  const records: Cell[][] = rows.map((r) => {
    const l = r.latencyUs;
    return [
      r.group,
      r.scenario,
      scenarioLabel({ name: r.scenario, tags: r.tags }),
      r.tags.join(', '),
      r.target,
      r.mode,
      r.round,
      r.status,
      r.error,
      r.status === 'ok' ? shortRunReason(r) : null,
      num(r.opsPerSec, 3),
      num(r.avgUsPerOp, 6),
      num(r.elapsedSec, 6),
      ...percentiles.map((p) => num(latencyAt(l, r.percentilesUs, p), 3)),
      num(l?.max, 3),
      num(l?.mean, 3),
      r.answered,
      r.ok,
      r.errors,
      r.misses,
      r.mismatches,
      r.engine,
      r.startedAt,
      ...flags.map((k) => (k in r.flags ? r.flags[k] : null)),
    ];
  });
  return stringify(records, { header: true, columns: detailColumns(rows, percentiles), cast: { boolean: (b) => String(b) } });
}

/** The summary row's warning: rounds too short to mean much. */
export function summaryNote(s: SummaryRow): string | null {
  if (s.shortRounds === 0) return null;
  return `${s.shortRounds} of ${s.okRounds} round${s.okRounds === 1 ? '' : 's'} too short to mean much (first: ${s.shortReason})`;
}

/** Whether the summary has a mix's per-command rows: then it has `command` and `requests` columns. */
function hasCommandRows(summaries: SummaryRow[]): boolean {
  return summaries.some((s) => (s.perCommand?.length ?? 0) > 0);
}

/**
 * `percentiles`: the study's chosen ones (StudyInfo.percentiles), for the
 * Totals and the set_/get_ columns; the columns they always were without.
 * A study with a command mix has a `command` column (`Totals`, then a row per
 * command of the mix) and a `requests` column.
 */
export function summaryColumns(summaries: SummaryRow[], baseline?: string, percentiles: readonly number[] = DEFAULT_CSV_PERCENTILES): string[] {
  const rounds = Math.max(0, ...summaries.map((s) => s.rounds.length));
  const commands = hasCommandRows(summaries);
  const cols = ['group', 'scenario', 'label', 'tags', 'mode'];
  if (commands) cols.push('command');
  cols.push('ok_rounds', 'bad_rounds');
  if (commands) cols.push('requests');
  for (let i = 1; i <= rounds; i++) cols.push(`round${i}_ops_per_sec`);
  cols.push(
    'mean_ops_per_sec',
    'stddev_ops_per_sec',
    // stddev / mean: how much the rounds disagree (0.05 = 5%).
    'cv_ops_per_sec',
    'min_ops_per_sec',
    'max_ops_per_sec',
    'mean_avg_us_per_op',
    'mean_elapsed_s',
    // Percentiles of all ok rounds' requests together (merged histograms), not means of the rounds'.
    ...percentileColumns(percentiles),
    'max_us',
    'mean_latency_us',
    'short_rounds',
  );
  // Per op kind (memtier's Sets/Gets; the columns above are the Totals), merged over the rounds as those.
  for (const side of ['set', 'get']) cols.push(...percentileColumns(percentiles, `${side}_`), `${side}_max_us`);
  if (baseline !== undefined) cols.push('baseline', 'ratio_to_baseline');
  // A capacity study: the ops/s columns are the highest rate within this SLO.
  if (summaries.some((s) => s.capacity)) cols.push('slo');
  cols.push('note');
  return cols;
}

export function summaryCsv(summaries: SummaryRow[], baseline?: string, percentiles: readonly number[] = DEFAULT_CSV_PERCENTILES): string {
  const rounds = Math.max(0, ...summaries.map((s) => s.rounds.length));
  const capacity = summaries.some((s) => s.capacity);
  const commands = hasCommandRows(summaries);
  const latency = (l: LatencyUs | null | undefined, chosen: Record<string, number> | null | undefined) => percentiles.map((p) => num(latencyAt(l, chosen, p), 3));
  const records: Cell[][] = [];
  for (const s of summaries) {
    const cells: Cell[] = [s.group, s.scenario, s.label, s.tags.join(', '), s.mode];
    if (commands) cells.push('Totals');
    cells.push(s.okRounds, s.badRounds);
    if (commands) cells.push(s.requests ?? null);
    for (let i = 0; i < rounds; i++) cells.push(num(s.rounds[i]?.opsPerSec, 3));
    const l = s.latencyUs;
    cells.push(
      num(s.opsPerSec.mean, 3),
      num(s.opsPerSec.stddev, 3),
      num(s.cvOpsPerSec, 6),
      num(s.opsPerSec.min, 3),
      num(s.opsPerSec.max, 3),
      num(s.avgUsPerOp.mean, 6),
      num(s.elapsedSec.mean, 6),
      ...latency(l, s.percentilesUs),
      num(l?.max, 3),
      num(l?.mean, 3),
      s.shortRounds,
    );
    cells.push(...latency(s.setLatencyUs, s.setPercentilesUs), num(s.setLatencyUs?.max, 3));
    cells.push(...latency(s.getLatencyUs, s.getPercentilesUs), num(s.getLatencyUs?.max, 3));
    if (baseline !== undefined) cells.push(baseline, num(s.ratioToBaseline, 6));
    if (capacity) cells.push(s.capacity?.run.slo ?? null);
    cells.push(summaryNote(s));
    records.push(cells);
    for (const c of s.perCommand ?? []) records.push(commandRecord(s, c, rounds, baseline, capacity, latency));
  }
  return stringify(records, { header: true, columns: summaryColumns(summaries, baseline, percentiles) });
}

/** A command of a mix, under its Totals row: its requests, ops/s per round and over them, its latency; the rest empty. */
function commandRecord(s: SummaryRow, c: CommandSummary, rounds: number, baseline: string | undefined, capacity: boolean, latency: (l: LatencyUs | null | undefined, chosen: Record<string, number> | null | undefined) => Cell[]): Cell[] {
  const cells: Cell[] = [s.group, s.scenario, s.label, s.tags.join(', '), s.mode, c.command, s.okRounds, s.badRounds, c.requests];
  for (let i = 0; i < rounds; i++) cells.push(num(c.rounds[i], 3));
  const o = c.opsPerSec;
  cells.push(num(o.mean, 3), num(o.stddev, 3), num(o.n > 1 && o.mean ? (o.stddev ?? 0) / o.mean : null, 6), num(o.min, 3), num(o.max, 3), null, null);
  cells.push(...latency(c.latencyUs, c.percentilesUs), num(c.latencyUs?.max, 3), num(c.latencyUs?.mean, 3), null);
  // The set_/get_ columns split Totals by side; a command is one side already.
  const sides = 2 * (latency(null, null).length + 1);
  for (let i = 0; i < sides; i++) cells.push(null);
  if (baseline !== undefined) cells.push(null, null);
  if (capacity) cells.push(null);
  cells.push(null);
  return cells;
}

/** The series CSV's columns: one row per run per interval. */
export const SERIES_COLUMNS = [
  'group',
  'scenario',
  'target',
  'mode',
  'round',
  'status',
  'engine',
  'interval',
  'time',
  't_s',
  'duration_s',
  'requests',
  'ops_per_sec',
  'p50_us',
  'p99_us',
  'max_us',
  'errors',
  'misses',
  'mismatches',
] as const;

/**
 * Every run's time series, a row per interval (the runs in order, their
 * intervals in order): what the HTML report's over-time charts draw. Runs
 * without a series (no figures) have no rows. `header: false` for rows to
 * append to a file that has the header already.
 */
export function seriesCsv(rows: RunRow[], header = true): string {
  const records: Cell[][] = rows.flatMap((r) =>
    (r.series ?? []).map((p, i) => [
      r.group,
      r.scenario,
      r.target,
      r.mode,
      r.round,
      r.status,
      r.engine,
      i,
      p.time ?? null,
      num(p.startSec, 6),
      num(p.durationSec, 6),
      p.requests,
      num(p.opsPerSec, 3),
      num(p.latencyUs.p50, 3),
      num(p.latencyUs.p99, 3),
      num(p.latencyUs.max, 3),
      p.errors,
      p.misses ?? null,
      p.mismatches ?? null,
    ]),
  );
  return stringify(records, { header, columns: [...SERIES_COLUMNS] });
}
