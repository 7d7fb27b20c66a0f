/**
 * Running a study: for each scenario start its target, run every mode for
 * every round, stop the target; after each finished run update the outputs.
 * A run that fails is recorded with its error and the study goes on (unless
 * fail-fast); an interrupt stops the current run, which is not recorded, and
 * the targets are stopped before the study returns.
 */
import { existsSync, rmSync } from 'node:fs';
import type { RunRow, RunStatus, StudyInfo } from '@respbench/report';
import { scenarioLabel, shortRunReason } from '@respbench/report';
import type { Engine, Mode, Plan } from '../engine-js/plan.js';
import type { RunResult } from '../run.js';
import { EXIT } from '../exit.js';
import { SIGNAL_EXIT, type StopSignal } from '../interrupt.js';
import { DEFAULT_PERCENTILES, missingCountsAsVerifyFailure, mixRowNames, redactPlan, runPlan } from '../run.js';
import { printable } from '../printable.js';
import { redactKnownInFile } from '../files.js';
import { buildPlan, type RawRunOptions } from '../validate.js';
import { parseDurationMs } from '../flag-values.js';
import { DEFAULT_WARMUP_MS, PROBE_MS } from '../capacity/settings.js';
import { runCapacity, unpreparedReport, type CapacityReport } from '../capacity/driver.js';
import { withStallMeter } from '../capacity/machine-stalls.js';
import { preparePlan } from '../prepare.js';
import { formatUs, type Slo } from '../capacity/slo.js';
import { StudyOutputs, targetLogPath, type OutputPaths, type WriteOutcome } from './outputs.js';
import { StudyProgress, type RunPosition } from './progress.js';
import type { CapacitySpec, ScenarioSpec } from './spec.js';
import { describeTarget, transportFlags, type TargetSpec } from './target-spec.js';
import { removeStaleDataDirs, startTarget, TargetError, type StartedTarget } from './targets.js';

export type StopReason = StopSignal | 'fail-fast';

/** What the study runs, settled before the first run: not to be confused with a run's Plan. */
export interface StudySetup {
  scenarios: ScenarioSpec[];
  rounds: number;
  /** Each scenario's modes after the command line's --mode/--modes. */
  modesOf(s: ScenarioSpec): Mode[];
  /** Each scenario's raw flags: built-in defaults < file defaults < group < scenario < command line. */
  rawOf(s: ScenarioSpec): Omit<RawRunOptions, 'host' | 'port' | 'mode'>;
  engineOf(s: ScenarioSpec): Engine;
  info: StudyInfo;
  paths: OutputPaths;
  lang: 'en' | 'zh';
  failFast: boolean;
  /** `mode: capacity`: each round is a capacity search (capacity/driver.ts) instead of a run. */
  capacity?: CapacitySpec;
}

/** An SLO as the reports say it: `p99 ≤ 1 ms, p99.9 ≤ 5 ms` (and `errors ≤ 0.1%` when given). */
export function sloForPeople(slo: Slo): string {
  const parts = slo.latency.map((c) => `${c.name} ≤ ${formatUs(c.maxUs)}`);
  if (slo.errorsGiven) parts.push(`errors ≤ ${Number((slo.maxErrorShare * 100).toPrecision(4))}%`);
  return parts.join(', ');
}

/** Every scenario's modes times the rounds. */
export function countRuns(setup: Pick<StudySetup, 'scenarios' | 'modesOf' | 'rounds'>): number {
  return setup.scenarios.reduce((a, s) => a + setup.modesOf(s).length * setup.rounds, 0);
}

export interface StudyOutcome {
  rows: RunRow[];
  markdown: string;
  stopped: StopReason | null;
  exitCode: number;
  /** Output files the last write could not write (a full or read-only disk). */
  unwritten: WriteOutcome['failed'];
}

function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The run's flags with the target's user, pass and dbnum where the flags give none. */
function targetCredentials(raw: Omit<RawRunOptions, 'host' | 'port' | 'mode'>, target: TargetSpec): Omit<RawRunOptions, 'host' | 'port' | 'mode'> {
  const c = target.credentials;
  if (!c) return raw;
  return {
    ...raw,
    user: raw.user ?? c.user ?? undefined,
    pass: raw.pass ?? c.password ?? undefined,
    dbnum: raw.dbnum ?? (c.dbnum === null ? undefined : String(c.dbnum)),
  };
}

/** The run's flags for the detail CSV: every Plan field but the mode (a column of its own), the password as ***. */
export function planFlags(plan: Plan): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(redactPlan(plan))) {
    if (k === 'mode') continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[snake(k)] = v;
    else if (v === null) out[snake(k)] = '';
    else out[snake(k)] = JSON.stringify(v);
  }
  return out;
}

/** A capacity round's settings and outcome for the detail CSV, beside the plan's flags. */
function capacityFlags(report: CapacityReport, spec: CapacitySpec): Record<string, string | number | boolean> {
  return {
    slo: spec.sloText,
    start_rate: report.startRate ?? '',
    step_duration_ms: spec.stepDurationMs,
    precision: spec.precision,
    capacity_steps: report.steps.length,
    capacity_end: report.end,
    bracket_met: report.bracket.met ?? '',
    bracket_failed: report.bracket.failed ?? '',
    capacity_limit: report.limit?.by ?? '',
  };
}

/** A mix's histogram per command, named as the run's perCommand rows; null without a mix. */
function commandHistogramsOf(plan: Plan, result: RunResult): RunRow['commandHistograms'] {
  const names = mixRowNames(plan);
  const hs = result.commandHistograms;
  if (!names || !hs || hs.length !== names.length) return null;
  return names.map((command, k) => ({ command, histogram: hs[k] }));
}

function statusOf(r: RunResult, serverGone: string | null): { status: RunStatus; error: string } {
  if (r.failure) {
    const gone = serverGone ? ` (the server ${serverGone})` : '';
    return { status: 'failed', error: `${r.failure.kind}: ${r.failure.message}${gone}` };
  }
  if (r.mismatches > 0) return { status: 'mismatches', error: `${r.mismatches} reads did not verify${r.firstMismatch ? `; first: ${r.firstMismatch}` : ''}` };
  if (r.lostWrites > 0) return { status: 'mismatches', error: `${r.lostWrites} reads found nothing for a key written and acknowledged earlier in the run (lost writes)` };
  if (missingCountsAsVerifyFailure(r)) return { status: 'mismatches', error: `${r.misses} reads found nothing where a value was written` };
  if (r.errors > 0) return { status: 'errors', error: `${r.errors} error replies; first: ${r.firstError ?? ''}` };
  return { status: 'ok', error: '' };
}

export class StudyRunner {
  readonly rows: RunRow[] = [];
  private stopReason: StopReason | null = null;
  private readonly controller = new AbortController();
  private current: StartedTarget | null = null;
  private runsDone = 0;
  private readonly runsPlanned: number;
  private readonly outputs: StudyOutputs;
  /** Scenario × mode pairs already warned about a short run: one warning each, not one per round. */
  private readonly warnedShort = new Set<string>();

  constructor(
    private readonly setup: StudySetup,
    private readonly io: { stdout: (t: string) => void; stderr: (t: string) => void },
    private readonly progress: StudyProgress,
  ) {
    this.runsPlanned = countRuns(setup);
    this.outputs = new StudyOutputs(
      setup.paths,
      setup.lang,
      (message) => {
        this.progress.clear();
        this.io.stderr(`respbench: ${message}\n`);
      },
      undefined,
      setup.info.percentiles,
    );
  }

  /** Asks the study to stop: the current run is aborted, targets are stopped, outputs written. */
  interrupt(reason: StopSignal): void {
    if (this.stopReason === null || this.stopReason === 'fail-fast') this.stopReason = reason;
    this.controller.abort();
  }

  /** A second interrupt: kill what is running now, without waiting. */
  killNow(): void {
    this.current?.kill();
  }

  private info(): StudyInfo {
    const engines = [...new Set(this.rows.map((r) => r.engine).filter((e) => e !== ''))];
    const stopped =
      this.stopReason === 'fail-fast' ? 'a run failed (--fail-fast)' : this.stopReason ? `interrupted (${this.stopReason})` : undefined;
    return { ...this.setup.info, engines, runsPlanned: this.runsPlanned, runsDone: this.runsDone, stopped };
  }

  private record(row: RunRow): void {
    this.rows.push(row);
    this.runsDone++;
    this.outputs.update(this.rows, () => this.info());
  }

  async run(): Promise<StudyOutcome> {
    const { scenarios } = this.setup;
    // Data directories of studies that were killed before they could clean up.
    removeStaleDataDirs();
    this.outputs.writeAll(this.rows, this.info());
    for (const [i, s] of scenarios.entries()) {
      if (this.stopReason) break;
      const label = scenarioLabel(s);
      const modes = this.setup.modesOf(s);
      this.progress.note(`scenario ${i + 1}/${scenarios.length} ${label} · starting ${describeTarget(s.target)}`);
      let target: StartedTarget;
      const log = targetLogPath(this.setup.paths, s.name);
      try {
        target = await startTarget(s.target, { signal: this.controller.signal, log });
      } catch (err) {
        if (this.stopReason && this.stopReason !== 'fail-fast') break;
        if (!(err instanceof TargetError)) throw err;
        this.recordTargetFailure(s, modes, err);
        this.keepLog(log);
        continue;
      }
      this.current = target;
      const rowsBefore = this.rows.length;
      let died: string | null = null;
      try {
        await this.runScenario(s, target, i, modes);
      } finally {
        this.progress.clear();
        died = target.exitReason();
        // `current` stays set while the server stops, so a second signal can still kill it.
        await target.stop();
        this.current = null;
      }
      // A server's log is kept beside the reports when something went wrong with it.
      const troubled = died !== null || this.rows.slice(rowsBefore).some((r) => r.status !== 'ok');
      if (target.log && !troubled) rmSync(target.log, { force: true });
      else if (target.log) this.keepLog(target.log);
    }
    this.progress.clear();
    const { markdown, failed } = this.outputs.writeAll(this.rows, this.info());
    return { rows: this.rows, markdown, stopped: this.stopReason, exitCode: this.exitCode(), unwritten: failed };
  }

  /** A kept server log: what the server wrote, with the study's passwords hidden as in every other output. */
  private keepLog(log: string): void {
    if (!existsSync(log) || redactKnownInFile(log)) return;
    this.io.stderr(`respbench: the server's log ${printable(log)} could not be read to hide passwords in it: look before you share it\n`);
  }

  /** A target that did not start: each of its runs is recorded as failed, and the study goes on. */
  private recordTargetFailure(s: ScenarioSpec, modes: Mode[], err: TargetError): void {
    const { rounds } = this.setup;
    this.progress.clear();
    this.io.stderr(`respbench: scenario "${printable(s.name)}": ${printable(err.message)}\n`);
    for (const mode of modes) {
      for (let round = 1; round <= rounds; round++) {
        this.record(this.baseRow(s, err.description, mode, round, 'failed', `target: ${err.message}`));
      }
    }
    this.progress.skipped(modes.length * rounds);
    if (this.setup.failFast) this.stopReason = 'fail-fast';
  }

  private async runScenario(s: ScenarioSpec, target: StartedTarget, index: number, modes: Mode[]): Promise<void> {
    const { rounds } = this.setup;
    const engine = this.setup.engineOf(s);
    for (const mode of modes) {
      for (let round = 1; round <= rounds; round++) {
        if (this.stopReason) return;
        const pos: RunPosition = {
          scenarioIndex: index + 1,
          scenarioCount: this.setup.scenarios.length,
          label: scenarioLabel(s),
          mode,
          round,
          rounds,
        };
        const raw = { ...targetCredentials(this.setup.rawOf(s), s.target), host: target.host, port: String(target.port), ...transportFlags(target), ...(target.cluster ? { cluster: true } : {}), mode } as RawRunOptions;
        if (this.setup.capacity) {
          const go = await this.runSearch(s, target, pos, raw, this.setup.capacity);
          if (!go) return;
          continue;
        }
        const plan = await preparePlan(buildPlan(raw).plan, { engine: engine.name }, this.controller.signal);
        this.progress.runStarted();
        const startedAt = new Date().toISOString();
        const percentiles = this.setup.info.percentiles ?? DEFAULT_PERCENTILES;
        const result = await runPlan(engine, plan, { signal: this.controller.signal, onProgress: (p) => this.progress.update(pos, p) }, percentiles);
        // An interrupted run measured a part of its requests: not a round.
        if (this.stopReason && this.stopReason !== 'fail-fast') return;
        const { status, error } = statusOf(result, target.exitReason());
        const measured = result.requests > 0;
        const row: RunRow = {
          ...this.baseRow(s, target.description, mode, round, status, error),
          opsPerSec: measured ? result.opsPerSec : null,
          avgUsPerOp: measured ? result.avgUsPerOp : null,
          elapsedSec: measured ? result.elapsedSec : null,
          latencyUs: measured ? result.latencyUs : null,
          histogram: measured ? result.histogram : null,
          setHistogram: measured ? (result.setHistogram ?? null) : null,
          getHistogram: measured ? (result.getHistogram ?? null) : null,
          percentilesUs: measured ? result.percentilesUs : null,
          commandHistograms: measured ? commandHistogramsOf(plan, result) : null,
          series: measured ? result.series : null,
          connectSec: result.connectElapsedNs === undefined ? null : result.connectElapsedNs / 1e9,
          answered: result.requests,
          ok: result.ok,
          errors: result.errors,
          misses: result.misses,
          mismatches: result.mismatches,
          engine: result.engine,
          startedAt,
          // The plan the run used: under --cluster, with the topology it found.
          flags: planFlags(result.plan),
        };
        this.record(row);
        const figures = `${Math.round(result.opsPerSec)} ops/s · ${result.elapsedSec.toFixed(2)} s`;
        this.progress.runFinished(pos, figures, status === 'ok' ? null : `${status}: ${error}`);
        if (status === 'ok') this.warnIfShort(s, row);
        if (status !== 'ok' && this.setup.failFast) {
          this.stopReason = 'fail-fast';
          return;
        }
      }
    }
  }

  /**
   * One round of a capacity study: a whole search (as `respbench capacity`)
   * recorded as a row whose ops/s is the capacity found (0 when no step met
   * the SLO); a search that ended on the client's own lag is a failed round
   * saying so. An interrupted search is not a round. False: stop the scenario.
   */
  private async runSearch(s: ScenarioSpec, target: StartedTarget, pos: RunPosition, raw: RawRunOptions, spec: CapacitySpec): Promise<boolean> {
    const engine = this.setup.engineOf(s);
    const warmupMs = raw.warmup === undefined ? DEFAULT_WARMUP_MS : parseDurationMs('--warmup', raw.warmup, true);
    const built = buildPlan({ ...raw, warmup: undefined, duration: undefined, rate: undefined });
    const settings = {
      slo: spec.slo,
      startRate: spec.startRate,
      stepDurationMs: spec.stepDurationMs,
      warmupMs,
      precision: spec.precision,
      probeMs: Math.min(spec.stepDurationMs, PROBE_MS),
      retry: true,
    };
    this.progress.runStarted();
    const startedAt = new Date().toISOString();
    // A redis_cluster target's topology, once for the whole search; a search that cannot find it failed (its row says why).
    let plan: Plan | null = null;
    let unprepared: unknown = null;
    try {
      plan = await preparePlan(built.plan, { engine: engine.name }, this.controller.signal);
    } catch (err) {
      unprepared = err;
    }
    const report = plan
      ? await withStallMeter(spec.slo, (stallMeter) => runCapacity(engine, plan!, settings, { stallMeter, signal: this.controller.signal, onProgress: (p) => this.progress.update(pos, p) }))
      : unpreparedReport(engine, built.plan, settings, unprepared);
    if (this.stopReason && this.stopReason !== 'fail-fast') return false;
    // A search that ended on the client's own lag measured the machine, not the server: no capacity, as `respbench capacity` exits 1.
    const failed = report.end === 'failed' || report.end === 'interrupted' || report.end === 'client-lag';
    const gone = target.exitReason();
    const error = failed ? `${report.failure ?? report.end}${gone ? ` (the server ${gone})` : ''}` : '';
    const status: RunStatus = failed ? 'failed' : 'ok';
    const steps = report.steps.filter((x) => !x.retried);
    const sum = (f: (x: (typeof steps)[number]) => number) => report.steps.reduce((a, x) => a + f(x), 0);
    const row: RunRow = {
      ...this.baseRow(s, target.description, raw.mode as Mode, pos.round, status, error),
      opsPerSec: failed ? null : (report.capacity ?? 0),
      answered: sum((x) => x.requests),
      ok: sum((x) => x.requests - x.errors),
      errors: sum((x) => x.errors),
      engine: engine.name,
      startedAt,
      flags: { ...planFlags(report.plan), ...capacityFlags(report, spec) },
      capacity: {
        slo: sloForPeople(spec.slo),
        bounds: spec.slo.latency.map((c) => ({ name: c.name, maxUs: c.maxUs })),
        capacity: report.capacity,
        end: report.end,
        steps: steps.map((x) => ({ targetRate: x.targetRate, achievedRate: x.achievedRate, latencyUs: { p50: x.latencyUs.p50, p99: x.latencyUs.p99, p999: x.latencyUs.p999 }, met: x.met })),
        limit: report.limit ? `limit at ${report.limit.atRate}/s: ${report.limit.by === 'client' ? 'the client (respbench), not the server' : 'the server'}; ${report.limit.reason}` : null,
      },
    };
    this.record(row);
    const figures = report.end === 'client-lag' ? 'not measured (client lag)' : failed ? 'search failed' : `${report.capacity ?? 0} ops/s at ${sloForPeople(spec.slo)} · ${report.steps.length} steps`;
    this.progress.runFinished(pos, figures, failed ? `failed: ${error}` : null);
    if (failed && this.setup.failFast) {
      this.stopReason = 'fail-fast';
      return false;
    }
    return true;
  }

  /**
   * Says on stderr (also with --quiet: it is about the results, not progress)
   * when a run was too short to mean much, once per scenario and mode; the
   * reports say it too.
   */
  private warnIfShort(s: ScenarioSpec, row: RunRow): void {
    const why = shortRunReason(row);
    const key = JSON.stringify([s.name, row.mode]);
    if (why === null || this.warnedShort.has(key)) return;
    this.warnedShort.add(key);
    this.progress.clear();
    this.io.stderr(
      `respbench: warning: ${scenarioLabel(s)} · ${row.mode} · round ${row.round}: ${why}; figures from so short a run mean little (raise --requests or set --duration)\n`,
    );
  }

  /** A row with no figures: what a failed-to-start target records, and what a run fills in. */
  private baseRow(s: ScenarioSpec, target: string, mode: Mode, round: number, status: RunRow['status'], error: RunRow['error']): RunRow {
    return {
      group: s.group,
      scenario: s.name,
      tags: s.tags,
      target,
      mode,
      round,
      status,
      error,
      opsPerSec: null,
      avgUsPerOp: null,
      elapsedSec: null,
      latencyUs: null,
      answered: 0,
      ok: 0,
      errors: 0,
      misses: 0,
      mismatches: 0,
      engine: '',
      startedAt: new Date().toISOString(),
      flags: {},
    };
  }

  private exitCode(): number {
    if (this.stopReason && this.stopReason !== 'fail-fast') return SIGNAL_EXIT[this.stopReason];
    if (this.rows.some((r) => r.status === 'failed')) return EXIT.failed;
    if (this.rows.some((r) => r.status === 'mismatches')) return EXIT.verifyFailed;
    if (this.rows.some((r) => r.status === 'errors')) return EXIT.errorReplies;
    return EXIT.ok;
  }
}
