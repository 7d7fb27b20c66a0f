/**
 * The capacity command's action: flags checked, the search run (driver.ts)
 * with its header, a row per step and the answer, Ctrl-C printing the
 * bracket so far, and the JSON and HTML written. Loaded by command.ts when
 * a search runs.
 */
import { engineForCommand } from '../engines.js';
import { Exit, EXIT } from '../exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from '../interrupt.js';
import type { CliIo } from '../io.js';
import { printable } from '../printable.js';
import { fsErrorText, writeWhole } from '../files.js';
import { ProgressLine } from '../progress-line.js';
import { buildPlan, checkCapacityFlags, checkUriFlags } from '../validate.js';
import { preparePlan } from '../prepare.js';
import type { Plan } from '../engine-js/plan.js';
import { parseDurationMs, parsePositive } from '../flag-values.js';
import { DEFAULT_WARMUP_MS, parsePrecision, PROBE_MS, type CapacityFlags } from './settings.js';
import { runCapacity, type CapacityReport } from './driver.js';
import { withStallMeter } from './machine-stalls.js';
import { answerLine, capacityHeader, capacityPage, formatCapacityJson, limitLine, probeLine, stepRow, tableHeader } from './output.js';
import { parseSlo } from './slo.js';

export async function capacityCommand(opts: CapacityFlags, io: CliIo, given: (option: string) => boolean): Promise<void> {
  checkCapacityFlags(opts.slo, given);
  const slo = parseSlo(opts.slo);
  const stepDurationMs = parseDurationMs('--step-duration', opts.stepDuration, false);
  const warmupMs = opts.warmup === undefined ? DEFAULT_WARMUP_MS : parseDurationMs('--warmup', opts.warmup, true);
  const precision = parsePrecision(opts.precision);
  const startRate = opts.startRate === undefined ? null : parsePositive('--start-rate', opts.startRate, 100_000_000);
  checkUriFlags(opts, given);
  const built = buildPlan({ ...opts, warmup: undefined, duration: undefined, rate: undefined }, process.env);
  const engine = engineForCommand(built.engine, io.stderr);
  const controller = new AbortController();
  let stoppedBy: StopSignal | null = null;
  // In place before the topology is asked for: a seed that says nothing must not hold a Ctrl-C until --timeout.
  const stopListening = onStopSignals((signal, n) => {
    if (n === 1) {
      stoppedBy = signal;
      controller.abort();
    } else io.stderr(`respbench: ${signal}: already stopping, printing the bracket so far\n`);
  });
  // --cluster: the topology once, for the header and every step (each run would otherwise ask again).
  let plan: Plan;
  try {
    plan = await preparePlan(built.plan, { engine: engine.name }, controller.signal);
  } catch (err) {
    stopListening();
    if (stoppedBy) {
      io.stderr(`respbench: ${stoppedBy}: interrupted while asking the cluster for its topology\n`);
      throw new Exit(SIGNAL_EXIT[stoppedBy]);
    }
    throw err;
  }
  const settings = { slo, startRate, stepDurationMs, warmupMs, precision, probeMs: Math.min(stepDurationMs, PROBE_MS), retry: opts.retry !== false };

  // The human lines go to stdout; with --json they go to stderr (unless --quiet), the JSON alone to stdout.
  // A live line for the step under way, on a terminal only, cleared before anything else is printed.
  const progress = new ProgressLine(io, !opts.quiet && !opts.json && io.stderrIsTty);
  const write = opts.json ? (opts.quiet ? () => undefined : (t: string) => io.stderr(`${t}\n`)) : (t: string) => io.stdout(`${t}\n`);
  const say = (t: string) => {
    progress.clear();
    write(t);
  };
  say(capacityHeader(engine.name, plan, slo, settings));
  let headed = false;
  let report: CapacityReport;
  try {
    report = await withStallMeter(slo, (stallMeter) => runCapacity(engine, plan, settings, {
      stallMeter,
      signal: controller.signal,
      onProgress: progress.enabled ? (p) => progress.update(p) : undefined,
      onProbe: (p, start) => say(probeLine(p, start)),
      onStep: (s) => {
        if (!headed) say(tableHeader(slo));
        headed = true;
        say(stepRow(s, slo));
      },
    }));
  } finally {
    progress.clear();
    stopListening();
  }
  if (stoppedBy) {
    report.end = 'interrupted';
    report.interrupted = { signal: stoppedBy };
  }
  report.slo.text = opts.slo;
  const answer = answerLine(report, slo);
  const limit = limitLine(report);
  if (opts.json) io.stdout(`${formatCapacityJson(report, opts.pretty)}\n`);
  if (opts.json && opts.quiet) {
    // The answer is what an interrupted search owes whoever stopped it, and a missed gate (exit 5) its reason, even with --quiet.
    if (stoppedBy || report.end === 'none-met') io.stderr(`${answer}\n`);
  } else {
    // With the other human lines: on stdout, or on stderr beside --json.
    say(answer);
    if (limit) say(printable(limit));
  }
  if (report.failure) io.stderr(`respbench: ${printable(report.failure)}\n`);
  if (opts.html !== undefined) {
    try {
      writeWhole(opts.html, capacityPage(report, slo));
    } catch (err) {
      io.stderr(`respbench: cannot write --html ${printable(opts.html)}: ${printable(fsErrorText(err))}\n`);
      throw new Exit(EXIT.failed);
    }
  }
  if (stoppedBy) throw new Exit(SIGNAL_EXIT[stoppedBy]);
  if (report.end === 'failed' || report.end === 'client-lag') throw new Exit(EXIT.failed);
  // Not even the lowest rate tried met the SLO: the answer ("capacity: none") is a gate missed, not a success.
  if (report.end === 'none-met') throw new Exit(EXIT.gateMissed);
}
