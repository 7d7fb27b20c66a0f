/**
 * The top-level command's action: flags → Plan → engine → one run (or the
 * `-t` suite) → output and exit status.
 */
import { engineForCommand } from './engines.js';
import { Exit, EXIT } from './exit.js';
import { onStopSignals, SIGNAL_EXIT } from './interrupt.js';
import type { CliIo } from './io.js';
import { formatHuman, formatJson } from './output.js';
import type { ProgressSnapshot } from './engine-js/progress.js';
import type { RunResult } from './run.js';
import { ProgressLine } from './progress-line.js';
import { exitCodeFor, runPlan } from './run.js';
import { spawnEmbedded } from './serve/spawn.js';
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
  // The demo server speaks plain TCP on a port of its own.
  if (opts.embedded && (plan.socket !== null || plan.tls !== null)) {
    throw new UsageError(`${plan.socket !== null ? '-s/--socket' : '--tls'} does not go with --embedded (the demo server listens on plain TCP)`);
  }
  const engine = engineForCommand(choice, io.stderr);
  if (engine.name === 'js' && plan.threads > 1) {
    io.stderr('respbench: --threads applies to the native engine; the JS engine runs on one thread\n');
  }
  const embedded = opts.embedded ? await spawnEmbedded() : null;
  if (embedded) {
    plan.host = '127.0.0.1';
    plan.port = embedded.port;
  }
  const controller = new AbortController();
  let signalCode: number = EXIT.ok;
  const stopListening = onStopSignals((signal) => {
    signalCode = SIGNAL_EXIT[signal];
    controller.abort();
  });
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
    stopListening();
    if (embedded) await embedded.stop();
  }
  if (opts.json) io.stdout(`${formatJson(result)}\n`);
  else io.stdout(`${formatHuman(result)}\n`);
  // The reason also goes to stderr, so a script reading --json still sees why it failed.
  if (result.failure && result.failure.kind !== 'interrupted') io.stderr(`respbench: ${result.failure.message}\n`);
  const code = signalCode !== EXIT.ok ? signalCode : exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
}
