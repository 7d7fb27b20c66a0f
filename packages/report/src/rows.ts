/**
 * The rows a study produces and the facts a report needs about the study.
 * Plain JSON-shaped data: the CLI fills them from RunResults, the report
 * functions only read them. Nothing here knows about sockets or engines.
 */
/** An interval's latency, microseconds (0 when it had no replies). */
export interface IntervalLatencyUs {
  p50: number;
  p99: number;
  max: number;
}

/** One interval of a run's series, as the CLI's `--json` gives it (RunResult.series). */
export interface SeriesPoint {
  /** When the interval began, ISO 8601 UTC. */
  time?: string;
  /** Seconds from the measured phase's start to the interval's start. */
  startSec: number;
  durationSec: number;
  requests: number;
  opsPerSec: number;
  errors: number;
  misses?: number;
  mismatches?: number;
  latencyUs: IntervalLatencyUs;
  /** The same per command the run sent. */
  perCommand?: { command: string; requests: number; opsPerSec: number; latencyUs: IntervalLatencyUs }[];
}

/** Per-request latency in microseconds, as the CLI's RunResult gives it. */
export interface LatencyUs {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/**
 * A run's latency histogram as the CLI's `--json` gives it: the non-empty
 * buckets as [lowest equivalent value in ns, count], ascending. Histograms of
 * the same layout merge by adding the counts of equal buckets.
 */
export interface HistogramData {
  unit?: 'ns';
  significantDigits?: number;
  buckets: [number, number][];
}

/**
 * How a run ended. Only `ok` runs enter the aggregates: a run that broke off,
 * got error replies or read back wrong values measured something else.
 */
export type RunStatus = 'ok' | 'failed' | 'errors' | 'mismatches';

/** One run: one scenario, one mode, one round. */
export interface RunRow {
  /** Title of the group the scenario belongs to. */
  group: string;
  scenario: string;
  tags: string[];
  /** What the run was pointed at, e.g. `redis preset aof_always` or `127.0.0.1:8888`. */
  target: string;
  mode: string;
  /** 1-based. */
  round: number;
  status: RunStatus;
  /** Why the run is not `ok` (failure, first error reply, first mismatch); empty when ok. */
  error: string;
  /** Null when the run produced no figures (the target never started, the run could not connect). */
  opsPerSec: number | null;
  /** elapsed / requests in microseconds: inverse throughput, not a latency. */
  avgUsPerOp: number | null;
  elapsedSec: number | null;
  latencyUs: LatencyUs | null;
  /**
   * The run's latency histogram: the summary's percentiles come from the
   * rounds' histograms merged (see SummarizeOptions), not from a mean of the
   * rounds' percentiles. Not written to the CSVs.
   */
  histogram?: HistogramData | null;
  /**
   * The same per op kind (memtier's Sets/Gets rows): the SET-side and the
   * GET-side requests' histograms, together `histogram`. Not written to the
   * CSVs; the summary merges them over the rounds.
   */
  setHistogram?: HistogramData | null;
  getHistogram?: HistogramData | null;
  /**
   * The run's latency at the study's chosen percentiles (StudyInfo.percentiles),
   * keyed `p50`, `p99.99` (the CLI's percentilesUs): the detail CSV's
   * percentile columns when the study chose them.
   */
  percentilesUs?: Record<string, number> | null;
  /**
   * A command mix (`commands:`): each command's histogram, in the mix's order
   * and named as the run's perCommand rows (`GET`, `SET`, `GET#2`). The
   * summary's per-command rows merge them over the rounds. Not in the detail CSV.
   */
  commandHistograms?: { command: string; histogram: HistogramData }[] | null;
  /**
   * The run's time series (the CLI's `series`, one entry per interval): the
   * HTML report's over-time charts and the series CSV. Not in the detail CSV.
   */
  series?: SeriesPoint[] | null;
  /**
   * Seconds from asking the engine to run to the first timed request, preload
   * and warmup aside (opening the connections, their handshakes): the
   * reports name a round whose connect phase took seconds. Absent in rows
   * written before it existed.
   */
  connectSec?: number | null;
  /** Timed requests that got a reply. */
  answered: number;
  ok: number;
  errors: number;
  misses: number;
  mismatches: number;
  engine: string;
  /** ISO time the run started. */
  startedAt: string;
  /** The run's flags (requests, pipeline, set_cmd, seed, …), one CSV column each. */
  flags: Record<string, string | number | boolean>;
  /**
   * A capacity study's round (`mode: capacity`): one whole search, whose
   * capacity is `opsPerSec` (0 when no step met the SLO); its steps are the
   * HTML's capacity chart. Not written to the CSVs (the flags carry the SLO
   * and settings).
   */
  capacity?: CapacityRun | null;
}

/** One capacity search of a study round (`respbench capacity`'s report, cut to what the reports show). */
export interface CapacityRun {
  /** The SLO as people read it: `p99 ≤ 1 ms`. */
  slo: string;
  /** Its latency bounds, for the chart's lines. */
  bounds: { name: string; maxUs: number }[];
  /** The highest rate that met the SLO; null when none did. */
  capacity: number | null;
  /** How the search ended: converged, ceiling, floor, steps, … */
  end: string;
  /** Every step but those run again, in the order run. */
  steps: { targetRate: number; achievedRate: number; latencyUs: { p50: number; p99: number; p999: number }; met: boolean }[];
  /** Who held back the lowest rate that failed, in a sentence; null when not known. */
  limit: string | null;
}

export interface ScenarioInfo {
  name: string;
  tags: string[];
}

export interface GroupInfo {
  title: string;
  scenarios: ScenarioInfo[];
}

export type Lang = 'en' | 'zh';

/** What the report says about the study as a whole. */
export interface StudyInfo {
  name: string;
  /** Local start time, shown as `YYYY-MM-DD HH:MM:SS`. */
  startedAt: Date;
  rounds: number;
  modes: string[];
  /** Groups and scenarios in the order of the study file: the order of every table. */
  groups: GroupInfo[];
  /** Scenario whose mean ops/s is 100% for the ratio column (per mode). */
  baseline?: string;
  /** One line of the parameters common to the study, e.g. `requests=1000000 pipeline=128`. */
  parameters?: string;
  /** Relative paths of the CSV files, listed in the Markdown preamble as the original tool's tables do. */
  files?: { detail?: string; summary?: string; series?: string };
  /** Engines that ran, e.g. `native`. */
  engines?: string[];
  /** Runs planned in total and finished so far, to say when a report is partial. */
  runsPlanned?: number;
  runsDone?: number;
  /** The scenarios a part run picked (`--only`): the report covers these alone. */
  only?: string[];
  /** Set when the study stopped early: `interrupted (SIGINT)`, `stopped after a failure`. */
  stopped?: string;
  /** Warn when a scenario's rounds' ops/s have a coefficient of variation above this (0.1 = 10%, the default). */
  cvWarn?: number;
  /**
   * A capacity study (`mode: capacity`): each round is a search and its
   * ops/s the highest rate that met this SLO (as people read it: `p99 ≤ 1 ms`).
   */
  capacity?: { slo: string };
  /**
   * The latency percentiles of the tables and CSVs (`--percentiles 50,99.99`,
   * ascending): the summary and detail CSVs' percentile columns and the
   * Markdown and HTML tables' latency columns. Unset: the columns they always
   * had (CSVs p50/p90/p99/p99.9, HTML p50/p99/p99.9, Markdown none).
   */
  percentiles?: number[];
}

/**
 * `name (tag, tag)`, the label the original tool's tables use; just `name`
 * without tags. A tag that repeats the name is left out: `none` with the tag
 * `none` is `none`, not `none (none)`.
 */
export function scenarioLabel(s: ScenarioInfo): string {
  const tags = s.tags.filter((t) => t !== s.name);
  return tags.length > 0 ? `${s.name} (${tags.join(', ')})` : s.name;
}

/** A run shorter than this, in seconds, says little about a server: warm-up, scheduling and one slow reply dominate it. */
export const SHORT_RUN_SECONDS = 1;
/** A run with fewer replies than this many windows (pipeline × connections) barely filled its pipelines. */
export const SHORT_RUN_WINDOWS = 10;

function flagNumber(row: Pick<RunRow, 'flags'>, key: string): number | null {
  const v = row.flags[key];
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

/**
 * Why a run is too short to mean much, or null: under SHORT_RUN_SECONDS of
 * measured time, or under SHORT_RUN_WINDOWS × pipeline × connections replies
 * (pipeline and connections from the row's flags). Runs without figures are
 * not short, they are failed.
 */
export function shortRunReason(row: Pick<RunRow, 'elapsedSec' | 'answered' | 'flags'>): string | null {
  if (row.elapsedSec === null) return null;
  const reasons: string[] = [];
  if (row.elapsedSec < SHORT_RUN_SECONDS) reasons.push(`ran ${formatSeconds(row.elapsedSec)} (under ${SHORT_RUN_SECONDS} s)`);
  const pipeline = flagNumber(row, 'pipeline');
  const connections = flagNumber(row, 'connections') ?? 1;
  if (pipeline !== null) {
    const min = SHORT_RUN_WINDOWS * pipeline * connections;
    if (row.answered < min) reasons.push(`${row.answered} requests (under ${SHORT_RUN_WINDOWS} × pipeline ${pipeline} × connections ${connections} = ${min})`);
  }
  return reasons.length > 0 ? `short run: ${reasons.join(', ')}` : null;
}

function formatSeconds(s: number): string {
  return s >= 0.1 ? `${s.toFixed(2)} s` : `${(s * 1000).toFixed(1)} ms`;
}
