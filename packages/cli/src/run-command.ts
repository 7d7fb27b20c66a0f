/**
 * The top-level command's action: flags → Plan → engine → one run (or the
 * `-t` suite) → output and exit status.
 */
import { ConnectInterrupted } from './engine-js/connection.js';
import { engineForCommand } from './engines.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from './interrupt.js';
import type { CliIo } from './io.js';
import { failureLines, formatFigures, formatHeader, formatJson } from './output.js';
import { printable, printableTarget, shownQuoted } from './printable.js';
import type { ProgressSnapshot } from './engine-js/progress.js';
import type { RunResult } from './run.js';
import { ProgressLine } from './progress-line.js';
import { DEFAULT_PERCENTILES, exitCodeFor, formatSeriesLine, interruptionOf, notStarted, runPlan, seriesEntry } from './run.js';
import type { Engine, Plan, RawInterval } from './engine-js/plan.js';
import { preparePlan, type Completion } from './prepare.js';
import { SHORT_TAIL_SHARE } from './series.js';
import { runMeta, type RunMeta } from './meta.js';
import { checkCpus, pinThisProcess } from './cpus.js';
import { checkWritableFile, writeWhole } from './files.js';
import type { RepeatSummary } from './repeat.js';
import type { EmbeddedServer } from './serve/spawn.js';
import { allErrors, parseTests, quietLine, rateLine } from './suite.js';
import { runSuiteCommand, suiteHeader } from './suite-output.js';
import { buildPlan, checkRepeatFlags, checkRunCommand, checkUriFlags, keylessMixCommands, readsOfUnwrittenKeys, type RawRunOptions } from './validate.js';
import { parseDurationMs, parseHostPort, parseInteger, parsePercentiles } from './flag-values.js';
import { UsageError } from './usage-error.js';

export type RunFlags = RawRunOptions & {
  json: boolean;
  quiet: boolean;
  embedded: boolean;
  tests?: string;
  csv: boolean;
  compare?: string;
  targetName?: string;
  /** Words after the options: a command to benchmark, as in redis-benchmark. */
  command?: string[];
  /** The time series' interval; given, one line per interval is printed as the run goes. */
  interval?: string;
  /** --percentiles, as given. */
  percentiles?: string;
  /** Several load machines: which one this is (0-based), of how many. */
  clientIndex?: string;
  clientCount?: string;
  /** --cpus: the CPUs the load runs on, as given. */
  cpus?: string;
  /** --hdr-log: the HdrHistogram log files' prefix. */
  hdrLog?: string;
  /** The arguments respbench was given, for the result's metadata (masked there). */
  argv?: readonly string[];
  /** --html <file>: the run as a page, with its time series charted. */
  html?: string;
  /** --precision: decimal places of latency figures, as given. */
  precision?: string;
  /** Result files: --pretty (indented JSON) and --json-file <path> (the result written whole). */
  pretty?: boolean;
  jsonFile?: string;
  /** CI gates: --slo conditions, --junit/--markdown files, -x/--repeat rounds (as given). */
  slo?: string;
  junit?: string;
  markdown?: string;
  repeat?: string;
};

/** Most --precision decimal places. */
const MAX_PRECISION = 6;

/** The lines of the table's output that say something went wrong: kept as they are under -q. */
const PROBLEM_LINES = ['no rate:', 'FAILED (', 'interrupted by', 'hint:', 'ERROR REPLIES:', 'VERIFY FAILED'];

/**
 * A single run's short output (-q, as redis-benchmark -q prints a test):
 * a command on the line is one line, `SET k v: 93457.95 requests per
 * second, p50=0.263 msec` (its error replies said in it, as a -t test's);
 * any other run a line per command row (`SET: …`, `GET: …`, a mix's
 * commands), each its own ops/s and p50. Below them, the table's lines
 * that say what went wrong (error replies, verification, a failure), word
 * for word: the exit status says it too.
 */
function shortRunLines(result: RunResult, precision: number | undefined): string {
  const p = result.plan;
  const problems = formatFigures(result, 'elsewhere').split('\n').filter((l) => PROBLEM_LINES.some((start) => l.startsWith(start)));
  if (p.literalCommands) return [quietLine({ label: printable(p.setCmd), result }, precision), ...problems.filter((l) => l.startsWith('VERIFY FAILED') || l.startsWith('interrupted by'))].join('\n');
  const rows = (result.perCommand ?? []).filter((c) => c.command !== 'Totals');
  // A result from before per-command rows: its one row under the mode's name.
  // Nothing measured (it could not connect), or only error replies: no rate to show, the lines below say why.
  const figures = notStarted(result) || allErrors(result) ? [] : rows.length > 0 ? rows.map((c) => rateLine(printable(c.command), c.opsPerSec, c.latencyUs.p50, precision)) : [rateLine(printable(p.mode.toUpperCase()), result.opsPerSec, result.latencyUs.p50, precision)];
  return [...figures, ...problems].join('\n');
}

/**
 * `-l` (redis-benchmark's loop): the same run (or -t suite) again and again,
 * each printed as it ends, until a signal stops one (its partial result is
 * printed, exit 128 + signal) or a run fails (its exit status). A signal
 * between two runs ends the loop as well.
 */
export async function loopUntilInterrupted(runOnce: () => Promise<void>): Promise<never> {
  const stopped: { by: StopSignal | null } = { by: null };
  const stopListening = onStopSignals((signal, n) => {
    if (n === 1) stopped.by = signal;
  });
  try {
    while (stopped.by === null) await runOnce();
  } finally {
    stopListening();
  }
  throw new Exit(SIGNAL_EXIT[stopped.by]);
}

/** The memtier_benchmark flags respbench takes as hidden aliases (their use makes -n's meaning worth a notice). */
export const MEMTIER_FLAGS = ['--ratio', '--test-time', '--data-size', '--key-maximum'];

/** `given(option)`: whether the option came from the command line (not its default). */
export async function runCommand(opts: RunFlags, io: CliIo, given: (option: string) => boolean = () => false): Promise<void> {
  const intervalMs = opts.interval === undefined ? undefined : parseDurationMs('--interval', opts.interval, false);
  const percentiles = opts.percentiles === undefined ? undefined : parsePercentiles(opts.percentiles);
  const precision = opts.precision === undefined ? undefined : parseInteger('--precision', opts.precision, [0, MAX_PRECISION]);
  // -q: redis-benchmark's short lines (one per command row), as a -t suite prints per test; --json stays whole.
  const short = opts.quiet && !opts.json && !opts.tests;
  const cpus = opts.cpus === undefined ? undefined : checkCpus('--cpus', opts.cpus);
  checkUriFlags(opts, given);
  const built = buildPlan(opts, process.env);
  const tests = opts.tests === undefined ? null : parseTests(opts.tests);
  const command = opts.command && opts.command.length > 0 ? opts.command : null;
  // `--compare redis=127.0.0.1:6379`: the name heads its column and the ratio ("kvstore vs redis").
  const named = opts.compare === undefined ? null : /^([^=[\]:\s]+)=(.+)$/.exec(opts.compare);
  const compare = opts.compare === undefined ? null : parseHostPort(named ? named[2] : opts.compare, '--compare');
  const share = checkRunCommand(built.plan, { ...opts, tests: tests !== null, command, compare: compare !== null }, given);
  // What a flag asks for is loaded when it is given (dynamic imports): a plain run parses none of it.
  if (opts.hdrLog !== undefined) (await import('./hdr-log.js')).checkHdrLogPrefix(opts.hdrLog);
  if (opts.html !== undefined) (await import('./html-report.js')).checkHtmlTarget(opts.html);
  // A --command with no __key__ is sent as written; said once, since --verify-get cannot check it.
  const keyless = keylessMixCommands(built.plan);
  if (keyless.length > 0) {
    io.stderr(`respbench: note: ${keyless.map((t) => `--command ${shownQuoted(t)}`).join(', ')} ${keyless.length === 1 ? 'has' : 'have'} no __key__: sent as written (no key drawn into it), replies counted but not verified${built.plan.verifyGet ? ' (--verify-get checks the other commands)' : ''}\n`);
  }
  // --verify-get beside reads of keys no write of this run names: every nil is a miss; said once.
  const unwritten = readsOfUnwrittenKeys(built.plan);
  if (unwritten.reads.length > 0) {
    const writes = unwritten.writes.length > 0 ? unwritten.writes.map(shownQuoted).join(', ') : 'none';
    io.stderr(`respbench: note: --verify-get: ${unwritten.reads.map(shownQuoted).join(', ')} ${unwritten.reads.length === 1 ? 'reads keys' : 'read keys'} that no write of this run names (its writes: ${writes}): a nil there is a miss, and only values an earlier run wrote there are checked\n`);
  }
  // memtier's --requests is per client; ours is the total: said once, not silently changed.
  const memtierFlag = (opts.argv ?? []).find((a) => MEMTIER_FLAGS.includes(a.split('=')[0]));
  if (memtierFlag && given('requests')) {
    io.stderr(`respbench: note: -n/--requests is the total over all connections, not per client as memtier_benchmark's --requests (${memtierFlag} is memtier's spelling); for memtier's meaning give N × -c\n`);
  }
  if (opts.jsonFile !== undefined) checkWritableFile('--json-file', opts.jsonFile);
  const gates = opts.slo === undefined ? [] : (await import('./gates.js')).parseRunSlo(opts.slo);
  if (opts.junit !== undefined) checkWritableFile('--junit', opts.junit);
  if (opts.markdown !== undefined) checkWritableFile('--markdown', opts.markdown);
  const repeat = opts.repeat === undefined ? 1 : parseInteger('-x/--repeat', opts.repeat, [1, 1000]);
  checkRepeatFlags(repeat, Boolean(tests), Boolean(compare));
  // The gates' percentiles are figures of the result too, so the table and --json show what was judged.
  const judged = gates.flatMap((c) => (c.percentile === null ? [] : [c.percentile]));
  const withJudged = judged.length === 0 ? percentiles : [...new Set([...(percentiles ?? DEFAULT_PERCENTILES), ...judged])];
  const engine = engineForCommand(built.engine, io.stderr);
  if (engine.name === 'js' && built.plan.threads > 1) {
    io.stderr('respbench: --threads applies to the native engine; the JS engine runs on one thread\n');
  }
  const backend = ioBackendOf(engine, built.plan, io.stderr);
  const ioLine = backend ? `io: ${backend.backend}${backend.note ? ` (${backend.note})` : ''}` : '';
  // redis-benchmark's habits for -t and a command on the line: its defaults, key names and -r meaning (see withBenchmarkDefaults).
  const completion: Completion = { engine: engine.name, share, benchmark: tests || command ? { given, command } : null, cpus };
  const controller = new AbortController();
  let signalCode: number = EXIT.ok;
  let stoppedBy: StopSignal | null = null;
  // The first signal stops the run; later ones must not lose what it measured.
  const stopListening = onStopSignals((signal, n) => {
    if (n === 1) {
      stoppedBy = signal;
      signalCode = SIGNAL_EXIT[signal];
      controller.abort();
    } else {
      io.stderr(`respbench: ${signal}: already stopping, printing what was measured\n`);
    }
  });
  // In place before the demo server starts: a Ctrl-C while it starts gives the (empty) interrupted result, exit 130.
  let embedded: EmbeddedServer | null = null;
  try {
    embedded = opts.embedded ? await (await import('./serve/spawn.js')).spawnEmbedded() : null;
  } catch (err) {
    stopListening();
    // A signal that came as it was being spawned (before it had a process group of its own) may have ended it: the story is the signal.
    if (stoppedBy) {
      io.stderr(`respbench: ${stoppedBy}: interrupted while the embedded server was starting\n`);
      throw new Exit(signalCode);
    }
    throw err;
  }
  // --cpus: this process, after the demo server started (it is not the load). The
  // native engine's workers pin themselves; the JS engine runs in this process.
  if (cpus) {
    const failed = pinThisProcess(cpus);
    if (failed && engine.name === 'js') {
      stopListening();
      if (embedded) await embedded.stop();
      throw new Error(`--cpus: cannot pin the JS engine's process: ${failed}`);
    }
  }
  // The Plan complete (under --cluster the topology first, so the header can say nodes × connections).
  let plan: Plan;
  try {
    plan = await preparePlan(built.plan, { ...completion, server: embedded ? { host: '127.0.0.1', port: embedded.port } : null }, controller.signal);
  } catch (err) {
    stopListening();
    if (embedded) await embedded.stop();
    if (err instanceof ConnectInterrupted) {
      io.stderr(`respbench: ${stoppedBy ?? 'SIGINT'}: interrupted while ${built.plan.cluster ? 'the cluster topology was read' : 'the run was set up'}: nothing was measured\n`);
      throw new Exit(signalCode === EXIT.ok ? EXIT.sigint : signalCode);
    }
    io.stderr(`respbench: ${printable((err as Error).message)}\n`);
    throw new Exit(err instanceof UsageError ? EXIT.usage : EXIT.failed);
  }
  // What will run, before it runs: with the human output on stdout, else on stderr (unless --quiet).
  const names = compare ? { a: printable(opts.targetName ?? printableTarget(plan.host, plan.port)), b: printable(named ? named[1] : printableTarget(compare.host, compare.port)) } : undefined;
  // The io line: under the header; with -t on stderr, so stdout keeps redis-benchmark's shape.
  const header = tests ? suiteHeader(engine.name, plan, tests, compare, names) : formatHeader(engine.name, plan) + (ioLine ? `\n${ioLine}` : '');
  if (tests && ioLine && !opts.quiet) io.stderr(`respbench: ${ioLine}\n`);
  // -q: stdout carries redis-benchmark's lines only; a -t suite's header (what ran, its notes) goes to stderr.
  if (!opts.json && !opts.csv && !opts.quiet) io.stdout(`${header}\n`);
  else if (!opts.quiet || (tests && !opts.json && !opts.csv)) io.stderr(`${header}\n`);
  const progress = new ProgressLine(io, !opts.quiet && !opts.json && io.stderrIsTty);
  let result: RunResult;
  try {
    // No line to show, no snapshots asked for: the engine skips the work (p99 so far) for nobody.
    const runOptions = { onProgress: progress.enabled ? (p: ProgressSnapshot) => progress.update(p) : undefined, signal: controller.signal, intervalMs };
    // --interval: a line per interval as it ends (memtier's habit), on stderr when stdout carries --json.
    // The phase's wall-clock start, as near as a live line needs (--json has the engine's own).
    let startedAt: number | null = null;
    const onInterval =
      intervalMs === undefined || tests || (opts.json && opts.quiet)
        ? undefined
        : (i: RawInterval) => {
            // The replies still in flight at the end: the JSON's series folds them into the last interval.
            if (i.index > 0 && i.endNs - i.startNs < intervalMs * 1e6 * SHORT_TAIL_SHARE) return;
            progress.clear();
            startedAt ??= Date.now() - i.endNs / 1e6;
            const line = `${formatSeriesLine(seriesEntry(plan, i, startedAt), Boolean(plan.rampConnections))}\n`;
            if (opts.json) io.stderr(line);
            else io.stdout(line);
          };
    if (tests) {
      const out = { json: opts.json, pretty: opts.pretty ?? false, jsonFile: opts.jsonFile, csv: opts.csv, stdout: io.stdout, stderr: io.stderr, beforeLine: () => progress.clear(), names, signal: () => stoppedBy, precision };
      const { code, lines } = await runSuiteCommand(engine, plan, tests, compare, out, runOptions);
      let missed = false;
      if (gateReportWanted(opts)) {
        const [{ suiteGateCases }, { finishGates, runColumns }] = await Promise.all([import('./gates.js'), import('./gate-reports.js')]);
        const gated = { title: 'respbench -t', classname: 'respbench.suite', gates: opts.slo ?? 'none', cases: suiteGateCases(lines, gates), columns: runColumns(gates.map((g) => g.figure)), startedUnixMs: lines[0]?.result.startedUnixMs ?? Date.now() };
        missed = finishGates(io.stderr, gated, opts);
      }
      if (signalCode !== EXIT.ok) throw new Exit(signalCode);
      if (code !== EXIT.ok) throw new Exit(code);
      if (missed) throw new Exit(EXIT.gateMissed);
      return;
    }
    const rounds: RunResult[] = [];
    for (let round = 0; round < repeat; round++) {
      rounds.push(await runPlan(engine, plan, { ...runOptions, onInterval }, withJudged));
      if (controller.signal.aborted || rounds[round].failure) break;
    }
    result = rounds.length === 1 ? rounds[0] : (await import('./repeat.js')).combineRounds(plan, rounds, withJudged);
  } finally {
    progress.clear();
    // Signals stay handled while the server stops; after that bin.ts's guard ignores them until the result is out.
    if (embedded) await embedded.stop();
    stopListening();
  }
  // The user stopped it: that is the story, even if the server went away meanwhile.
  if (stoppedBy && result.failure && result.failure.kind !== 'interrupted') {
    result = { ...result, failure: { kind: 'interrupted', message: `interrupted (${stoppedBy})` }, complete: false };
  }
  if (stoppedBy && result.failure?.kind === 'interrupted') result.interrupted = interruptionOf(stoppedBy, result);
  result.meta = runMeta(result.engine, result.startedUnixMs ?? Date.now(), opts.argv ?? [], backend ?? undefined);
  if (opts.json) io.stdout(`${formatJson(result, opts.pretty)}\n`);
  else if (short) io.stdout(`${shortRunLines(result, precision)}\n`);
  else {
    // A first round that failed or was interrupted carries no repeat summary: then there is no line for it.
    const summary = repeat > 1 ? (await import('./repeat.js')).repeatLine(result as { repeat?: RepeatSummary }) : null;
    io.stdout(`${formatFigures(result, 'elsewhere', precision)}\n${summary === null ? '' : `${summary}\n`}`);
  }
  if (opts.jsonFile !== undefined) writeWhole(opts.jsonFile, `${formatJson(result, opts.pretty)}\n`);
  if (opts.hdrLog !== undefined) {
    if (notStarted(result)) io.stderr('respbench: --hdr-log: the run measured nothing, no log files written\n');
    else (await import('./hdr-log.js')).writeHdrLogs(result, opts.hdrLog);
  }
  // The reason once, on stderr, whatever stdout carries (the table or --json).
  for (const line of failureLines(result, opts.json)) io.stderr(`${line}\n`);
  const written = opts.html === undefined || (await (await import('./html-report.js')).writeRunHtml(opts.html, result, [], io.stderr));
  let missed = false;
  if (gateReportWanted(opts) && !notStarted(result)) {
    const [{ runGateCases }, { finishGates, runColumns }] = await Promise.all([import('./gates.js'), import('./gate-reports.js')]);
    const gated = { title: 'respbench run', classname: 'respbench.run', gates: opts.slo ?? 'none', cases: runGateCases(result, gates), columns: runColumns(gates.map((g) => g.figure)), startedUnixMs: result.startedUnixMs ?? Date.now() };
    missed = finishGates(io.stderr, gated, opts);
  }
  const code = signalCode !== EXIT.ok ? signalCode : exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
  if (missed) throw new Exit(EXIT.gateMissed);
  if (!written) throw new Exit(EXIT.failed);
}

/** A gate report is made when a gate or a JUnit file is asked for, or a Markdown file. */
function gateReportWanted(opts: RunFlags): boolean {
  return opts.slo !== undefined || opts.junit !== undefined || opts.markdown !== undefined;
}

/**
 * --io: which I/O backend the native engine runs on (and why, when auto fell
 * back or TLS keeps it on epoll), for the line under the header and the
 * result's meta.io; `--io uring` where io_uring cannot work is one line and
 * exit 1. The JS engine ignores --io, with a notice, as it does --threads.
 */
function ioBackendOf(engine: Engine, plan: Plan, stderr: (text: string) => void): RunMeta['io'] | null {
  if (!engine.ioBackend) {
    if (plan.io !== undefined && plan.io !== 'auto') stderr('respbench: --io applies to the native engine; the JS engine runs on node\'s event loop\n');
    return null;
  }
  const chosen = engine.ioBackend(plan);
  if (chosen.error !== null || chosen.backend === null) {
    stderr(`respbench: ${chosen.error ?? '--io: no backend'}\n`);
    throw new Exit(EXIT.failed);
  }
  return { backend: chosen.backend, note: chosen.note };
}
