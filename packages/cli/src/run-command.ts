/**
 * The top-level command's action: flags → Plan → engine → one run (or the
 * `-t` suite) → output and exit status.
 */
import { engineForCommand } from './engines.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from './interrupt.js';
import type { CliIo } from './io.js';
import { closedEarlyHint, formatFigures, formatHeader, formatJson } from './output.js';
import { printable } from './printable.js';
import type { ProgressSnapshot } from './engine-js/progress.js';
import type { RunResult } from './run.js';
import { ProgressLine } from './progress-line.js';
import { exitCodeFor, interruptionOf, runPlan } from './run.js';
import { spawnEmbedded } from './serve/spawn.js';
import { checkSuiteFlags, parseTests, planForCommand, withBenchmarkDefaults } from './suite.js';
import { runSuiteCommand, suiteHeader } from './suite-output.js';
import { buildPlan, parseHostPort, UsageError, type RawRunOptions } from './validate.js';

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
};

/** `given(option)`: whether the option came from the command line (not its default). */
export async function runCommand(opts: RunFlags, io: CliIo, given: (option: string) => boolean = () => false): Promise<void> {
  const built = buildPlan(opts, process.env);
  const choice = built.engine;
  let plan = built.plan;
  const tests = opts.tests === undefined ? null : parseTests(opts.tests);
  const command = opts.command && opts.command.length > 0 ? opts.command : null;
  // `--compare redis=127.0.0.1:6379`: the name heads its column and the ratio ("kvstore vs redis").
  const named = opts.compare === undefined ? null : /^([^=[\]:\s]+)=(.+)$/.exec(opts.compare);
  const compare = opts.compare === undefined ? null : parseHostPort(named ? named[2] : opts.compare, '--compare');
  if (opts.targetName !== undefined && !compare) throw new UsageError('--target-name goes with --compare');
  if (!tests && (opts.csv || compare)) throw new UsageError(`${opts.csv ? '--csv' : '--compare'} goes with -t/--tests`);
  if (tests && command) throw new UsageError(`-t/--tests and a command on the line (${command.join(' ')}) do not go together: give one`);
  // redis-benchmark's habits: its defaults, key names and -r meaning (see withBenchmarkDefaults).
  if (tests || command) {
    checkSuiteFlags(plan, given, tests ? '-t/--tests' : 'a command on the line');
    plan = withBenchmarkDefaults(plan, given);
    if (command) plan = planForCommand(plan, command);
  }
  const engine = engineForCommand(choice, io.stderr);
  if (engine.name === 'js' && plan.threads > 1) {
    io.stderr('respbench: --threads applies to the native engine; the JS engine runs on one thread\n');
  }
  // The Plan (and so --json) says what runs: one thread in JS, at most one per connection in native.
  plan = { ...plan, threads: engine.name === 'js' ? 1 : Math.min(plan.threads, plan.connections) };
  const embedded = opts.embedded ? await spawnEmbedded() : null;
  if (embedded) {
    plan.host = '127.0.0.1';
    plan.port = embedded.port;
  }
  // What will run, before it runs: with the human output on stdout, else on stderr (unless --quiet).
  const names = compare ? { a: opts.targetName ?? `${plan.host}:${plan.port}`, b: named ? named[1] : `${compare.host}:${compare.port}` } : undefined;
  const header = tests ? suiteHeader(engine.name, plan, tests, compare, names) : formatHeader(engine.name, plan);
  if (!opts.json && !opts.csv) io.stdout(`${header}\n`);
  else if (!opts.quiet) io.stderr(`${header}\n`);
  const controller = new AbortController();
  let signalCode: number = EXIT.ok;
  let caught: StopSignal | null = null;
  const stopListening = onStopSignals((signal) => {
    signalCode = SIGNAL_EXIT[signal];
    caught ??= signal;
    controller.abort();
  });
  const progress = new ProgressLine(io, !opts.quiet && !opts.json && io.stderrIsTty);
  let result: RunResult;
  try {
    // No line to show, no snapshots asked for: the engine skips the work (p99 so far) for nobody.
    const runOptions = { onProgress: progress.enabled ? (p: ProgressSnapshot) => progress.update(p) : undefined, signal: controller.signal };
    if (tests) {
      const out = { json: opts.json, csv: opts.csv, stdout: io.stdout, stderr: io.stderr, beforeLine: () => progress.clear(), names, signal: () => caught };
      const code = await runSuiteCommand(engine, plan, tests, compare, out, runOptions);
      if (signalCode !== EXIT.ok) throw new Exit(signalCode);
      if (code !== EXIT.ok) throw new Exit(code);
      return;
    }
    result = await runPlan(engine, plan, runOptions);
  } finally {
    progress.clear();
    stopListening();
    if (embedded) await embedded.stop();
  }
  if (caught && result.failure?.kind === 'interrupted') result.interrupted = interruptionOf(caught, result);
  if (opts.json) io.stdout(`${formatJson(result)}\n`);
  else io.stdout(`${formatFigures(result)}\n`);
  // The reason also goes to stderr, so a script reading --json still sees why it failed.
  if (result.failure && result.failure.kind !== 'interrupted') {
    io.stderr(`respbench: ${printable(result.failure.message)}\n`);
    const hint = closedEarlyHint(result);
    if (hint && opts.json) io.stderr(`respbench: ${hint}\n`);
  }
  const code = signalCode !== EXIT.ok ? signalCode : exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
}
