/**
 * The rows a study produces and the facts a report needs about the study.
 * Plain JSON-shaped data: the CLI fills them from RunResults, the report
 * functions only read them. Nothing here knows about sockets or engines.
 */

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
  files?: { detail?: string; summary?: string };
  /** Engines that ran, e.g. `native`. */
  engines?: string[];
  /** Runs planned in total and finished so far, to say when a report is partial. */
  runsPlanned?: number;
  runsDone?: number;
  /** Set when the study stopped early: `interrupted (SIGINT)`, `stopped after a failure`. */
  stopped?: string;
}

/** `name (tag, tag)`, the label the original tool's tables use; just `name` without tags. */
export function scenarioLabel(s: ScenarioInfo): string {
  return s.tags.length > 0 ? `${s.name} (${s.tags.join(', ')})` : s.name;
}
