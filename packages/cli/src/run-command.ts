/**
 * The top-level command's action: flags → Plan → engine → one run (or the
 * `-t` suite) → output and exit status.
 */
import { engineForCommand } from './engines.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT, type StopSignal } from './interrupt.js';
import type { CliIo } from './io.js';
import { formatHuman, formatJson } from './output.js';
import type { ProgressSnapshot } from './engine-js/progress.js';
import type { RunResult } from './run.js';
import { ProgressLine } from './progress-line.js';
import { exitCodeFor, runPlan } from './run.js';
import { spawnEmbedded, type EmbeddedServer } from './serve/spawn.js';
import { checkSuiteFlags, parseTests } from './suite.js';
import { runSuiteCommand } from './suite-output.js';
import { buildPlan, parseHostPort, UsageError, type RawRunOptions } from './validate.js';

export type RunFlags = RawRunOptions & { json: boolean; quiet: boolean; embedded: boolean; tests?: string; csv: boolean; compare?: string };

/** `given(option)`: whether the option came from the command line (not its default). */
export async function runCommand(opts: RunFlags, io: CliIo, given: (option: string) => boolean = () => false): Promise<void> {
  const { plan, engine: choice } = buildPlan(opts);
  const tests = opts.tests === undefined ? null : parseTests(opts.tests);
  const compare = opts.compare === undefined ? null : parseHostPort(opts.compare, '--compare');
  if (!tests && (opts.csv || compare)) throw new UsageError(`${opts.csv ? '--csv' : '--compare'} goes with -t/--tests`);
  if (tests) checkSuiteFlags(plan, given);
  const engine = engineForCommand(choice, io.stderr);
  if (engine.name === 'js' && plan.threads > 1) {
    io.stderr('respbench: --threads applies to the native engine; the JS engine runs on one thread\n');
  }
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
    embedded = opts.embedded ? await spawnEmbedded() : null;
  } catch (err) {
    stopListening();
    // A signal that came as it was being spawned (before it had a process group of its own) may have ended it: the story is the signal.
    if (stoppedBy) {
      io.stderr(`respbench: ${stoppedBy}: interrupted while the embedded server was starting\n`);
      throw new Exit(signalCode);
    }
    throw err;
  }
  if (embedded) {
    plan.host = '127.0.0.1';
    plan.port = embedded.port;
  }
  const progress = new ProgressLine(io, !opts.quiet && !opts.json && io.stderrIsTty);
  let result: RunResult;
  try {
    const runOptions = { onProgress: (p: ProgressSnapshot) => progress.update(p), signal: controller.signal };
    if (tests) {
      const out = { json: opts.json, csv: opts.csv, stdout: io.stdout, stderr: io.stderr, beforeLine: () => progress.clear() };
      const code = await runSuiteCommand(engine, plan, tests, compare, out, runOptions);
      if (signalCode !== EXIT.ok) throw new Exit(signalCode);
      if (code !== EXIT.ok) throw new Exit(code);
      return;
    }
    result = await runPlan(engine, plan, runOptions);
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
  if (opts.json) io.stdout(`${formatJson(result)}\n`);
  else io.stdout(`${formatHuman(result)}\n`);
  // The reason also goes to stderr, so a script reading --json still sees why it failed.
  if (result.failure && result.failure.kind !== 'interrupted') io.stderr(`respbench: ${result.failure.message}\n`);
  const code = signalCode !== EXIT.ok ? signalCode : exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
}
