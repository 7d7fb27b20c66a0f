/**
 * The `respbench` command line: flags (commander), then a Plan, an engine,
 * a run and its output. Usage errors become one line and exit 2.
 */
import { Command, CommanderError, Option } from 'commander';
import { EngineUnavailableError, selectEngine } from './engines.js';
import { formatHuman, formatJson } from './output.js';
import { LatencyHistogram } from './engine-js/histogram.js';
import type { Engine, Plan } from './engine-js/plan.js';
import type { ProgressSnapshot, RunOptions } from './engine-js/progress.js';
import { comparisonTable, CSV_HEADER, csvLine, parseTests, quietLine, runSuite, SUITE_NAMES, type SuiteLine, type SuiteTest } from './suite.js';
import { ProgressLine } from './progress-line.js';
import { EXIT, exitCodeFor, runPlan, type RunResult } from './run.js';
import { spawnEmbedded, startServer } from './serve.js';
import { registerStudyCommand } from './study/command.js';
import { buildPlan, LIMITS, parseInteger, UsageError, type RawRunOptions } from './validate.js';

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  stderrIsTty: boolean;
}

const defaultIo: CliIo = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  stderrIsTty: Boolean(process.stderr.isTTY),
};

/** Thrown to end the program with a status once its output is written. */
export class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

const HELP_AFTER = `
Examples:
  respbench --embedded                                   try it against the built-in demo server
  respbench --port 6379 --mode set --requests 100000     Redis, writes
  respbench --port 6379 --mode get --verify-get          Redis, reads checked against what was written
  respbench --port 8888 --set-cmd RSET --get-cmd RGET    a kvstore (RSET key value / RGET key)
  respbench --set-cmd 'HSET __key__ field __data__' --get-cmd 'HGET __key__ field'   Redis hashes

--requests is the total over all connections. avg us/op is elapsed / requests
(inverse throughput); the p50..max columns are per-request latency, reply parsed
minus request written, even when pipelined.

Exit status: 0 clean; 1 could not run or the run broke off (refused, closed,
protocol error, timeout); 2 bad usage; 3 the server answered with error
replies; 4 reads did not verify (--verify-get); 130/143 interrupted.
`;

/** Adds the flags of one run (shared by the top-level command and studies' overrides). */
export function addRunOptions(cmd: Command): Command {
  return cmd
    .option('--host <ip>', 'server host', '127.0.0.1')
    .option('-p, --port <port>', `server port (${LIMITS.port.join('..')})`, '6379')
    .option('--mode <mode>', 'set | get | mixed', 'mixed')
    .option('-n, --requests <n>', 'total requests over all connections (not per second)', '1000000')
    .option('-P, --pipeline <n>', 'requests in flight per connection (sliding window)', '64')
    .option('-r, --keyspace <n>', 'keys are drawn from [0, keyspace)', '100000')
    .option('--key-pattern <pattern>', 'uniform | sequential | gaussian | zipf (deterministic per seed)', 'uniform')
    .option('--key-stddev <n>', 'gaussian: standard deviation in keys (default: keyspace / 6)')
    .option('--zipf-exponent <s>', 'zipf: exponent s > 0; larger is more skewed', '0.99')
    .option('-d, --value-size <n>', 'value bytes, or a range MIN-MAX (size derived from the key)', '32')
    .option('--set-ratio <0..100>', 'mixed mode: percentage of writes (reads: 100 - this)', '50')
    .option('--set-cmd <cmd>', 'write command: a name (NAME key value) or a template with __key__ __data__ __rand_int__', 'SET')
    .option('--get-cmd <cmd>', 'read command: a name (NAME key) or a template with __key__', 'GET')
    .option('--key-prefix <prefix>', 'key prefix; keys are <prefix><index>', 'bench:key:')
    .option('--seed <n>', 'PRNG seed 0..4294967295; fix it to repeat a run (default: from the clock, printed)')
    .option('--verify-get', 'check every read reply against the value written for its key', false)
    .option('-c, --connections <n>', 'connections; each has its own key stream and share of the requests', '1')
    .option('--threads <n>', 'native engine worker threads (the JS engine runs on one)')
    .addOption(new Option('--engine <engine>', 'auto (native if it loads, else js) | native | js').default('auto'))
    .option('--timeout <duration>', 'per-request reply timeout, e.g. 500ms, 10s; 0 turns it off', '10s')
    .option('--no-preload', 'get mode: read what is already there instead of writing the keys first')
    .option('--duration <duration>', 'run for this long (e.g. 30s) instead of --requests')
    .option('--warmup <duration>', 'send load for this long first, left out of every figure')
    .option('--rate <n>', 'open loop: total requests per second on a schedule; latency from the intended send time');
}

function numberOr(raw: string | undefined, flag: string, fallback: number): number {
  return raw === undefined ? fallback : parseInteger(flag, raw, [0, 65535]);
}

export function buildProgram(io: CliIo = defaultIo): Command {
  const program = new Command('respbench');
  program
    .description('Load generator for servers that speak the Redis protocol (RESP): pipelined, verified, per-request latency')
    .enablePositionalOptions()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // Commander's own usage errors, as one line in the same voice as ours.
      outputError: (text, write) => write(`respbench: ${text.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ').trim()} (see --help)\n`),
    })
    .exitOverride()
    .showSuggestionAfterError(true);
  addRunOptions(program)
    .option('--json', 'print the RunResult as JSON (stable field names)', false)
    .option('-q, --quiet', 'no progress on stderr', false)
    .option('--embedded', 'run against the built-in demo/test server (respbench serve) on a free port', false)
    .option('-t, --tests <list>', `the command suite, redis-benchmark's tests in turn: ${SUITE_NAMES.join(',')} (lrange = all four)`)
    .option('--csv', 'with -t: print CSV in redis-benchmark --csv columns', false)
    .option('--compare <host:port>', 'with -t: run the suite against this second target too and print both with the ratio')
    .addHelpText('after', HELP_AFTER)
    .action(async (opts: RunFlags, cmd: Command) => {
      await runCommand(opts, io, (name) => cmd.getOptionValueSource(name) === 'cli');
    });

  program
    .command('serve')
    .description('a kvstore-shaped RESP server for demos and tests (SET/GET, RSET/RGET, HSET/HGET as key value; in memory)')
    .option('--host <ip>', 'listen address', '127.0.0.1')
    .option('-p, --port <port>', 'port (0 picks a free one)', '8888')
    .addOption(new Option('--exit-with-stdin').hideHelp())
    .action(async (opts: { host: string; port: string; exitWithStdin?: boolean }) => {
      const server = await startServer(numberOr(opts.port, '--port', 8888), opts.host);
      io.stdout(`respbench serve (demo/test target) listening on ${opts.host}:${server.port}\n`);
      const stop = () => void server.close().then(() => process.exit(0));
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      if (opts.exitWithStdin) {
        process.stdin.on('end', stop);
        process.stdin.on('error', stop);
        process.stdin.resume();
      }
      await new Promise(() => undefined);
    });

  registerStudyCommand(program, io);
  return program;
}

type RunFlags = RawRunOptions & { json: boolean; quiet: boolean; embedded: boolean; tests?: string; csv: boolean; compare?: string };

/** `host:port` for --compare. */
function parseTarget(raw: string): { host: string; port: number } {
  const m = /^(.+):(\d+)$/.exec(raw.trim());
  if (!m) throw new UsageError(`--compare must be host:port (got "${raw}")`);
  return { host: m[1], port: parseInteger('--compare port', m[2], LIMITS.port) };
}

async function runCommand(opts: RunFlags, io: CliIo, given: (option: string) => boolean = () => false): Promise<void> {
  const { plan, engine: choice } = buildPlan(opts);
  const tests = opts.tests === undefined ? null : parseTests(opts.tests);
  const compare = opts.compare === undefined ? null : parseTarget(opts.compare);
  if (!tests && (opts.csv || compare)) throw new UsageError(`${opts.csv ? '--csv' : '--compare'} goes with -t/--tests`);
  if (tests) checkSuiteFlags(plan, given);
  let selection;
  try {
    selection = selectEngine(choice);
  } catch (err) {
    if (err instanceof EngineUnavailableError) {
      io.stderr(`respbench: ${err.message}\n`);
      throw new Exit(EXIT.failed);
    }
    throw err;
  }
  if (selection.notice) io.stderr(`${selection.notice}\n`);
  if (selection.engine.name === 'js' && plan.threads > 1) {
    io.stderr('respbench: --threads applies to the native engine; the JS engine runs on one thread\n');
  }
  const embedded = opts.embedded ? await spawnEmbedded() : null;
  if (embedded) {
    plan.host = '127.0.0.1';
    plan.port = embedded.port;
  }
  const controller = new AbortController();
  let signalCode: number = EXIT.ok;
  const onSignal = (code: number) => () => {
    signalCode = code;
    controller.abort();
  };
  const onInt = onSignal(EXIT.sigint);
  const onTerm = onSignal(EXIT.sigterm);
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  const progress = new ProgressLine(io, !opts.quiet && !opts.json && io.stderrIsTty);
  let result: RunResult;
  try {
    const runOptions = { onProgress: (p: ProgressSnapshot) => progress.update(p), signal: controller.signal };
    if (tests) {
      const code = await runSuiteCommand(selection.engine, plan, tests, compare, opts, io, progress, runOptions);
      if (signalCode !== EXIT.ok) throw new Exit(signalCode);
      if (code !== EXIT.ok) throw new Exit(code);
      return;
    }
    result = await runPlan(selection.engine, plan, runOptions);
  } finally {
    progress.clear();
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    if (embedded) await embedded.stop();
  }
  if (opts.json) io.stdout(`${formatJson(result)}\n`);
  else io.stdout(`${formatHuman(result)}\n`);
  // The reason also goes to stderr, so a script reading --json still sees why it failed.
  if (result.failure && result.failure.kind !== 'interrupted') io.stderr(`respbench: ${result.failure.message}\n`);
  const code = signalCode !== EXIT.ok ? signalCode : exitCodeFor(result);
  if (code !== EXIT.ok) throw new Exit(code);
}

/** The suite sets its own commands and modes: flags that would be silently ignored are refused. */
function checkSuiteFlags(plan: Plan, given: (option: string) => boolean): void {
  for (const flag of ['mode', 'setCmd', 'getCmd', 'verifyGet', 'setRatio']) {
    if (given(flag)) {
      const name = `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      throw new UsageError(`${name} does not go with -t/--tests (each test has its own command)`);
    }
  }
  // The prefix is pasted into the suite's command text, where a space would split an argument.
  if (/\s|__/.test(plan.keyPrefix)) {
    throw new UsageError(`--key-prefix must not contain spaces or "__" with -t/--tests (got ${JSON.stringify(plan.keyPrefix)})`);
  }
}

async function runSuiteCommand(
  engine: Engine,
  plan: Plan,
  tests: SuiteTest[],
  compare: { host: string; port: number } | null,
  opts: RunFlags,
  io: CliIo,
  progress: ProgressLine,
  runOptions: RunOptions,
): Promise<number> {
  const print = (line: SuiteLine) => {
    progress.clear();
    if (opts.json || compare) return;
    if (opts.csv) {
      const h = LatencyHistogram.fromData(line.result.histogram);
      io.stdout(`${csvLine(line, h.valueAtPercentile(95) / 1000, h.min() / 1000)}\n`);
    } else io.stdout(`${quietLine(line)}\n`);
  };
  if (opts.csv && !opts.json && !compare) io.stdout(`${CSV_HEADER}\n`);
  const a = await runSuite(engine, plan, tests, print, runOptions);
  let b: SuiteLine[] = [];
  if (compare) {
    b = await runSuite(engine, { ...plan, ...compare }, tests, print, runOptions);
    const rows = a.filter((line) => b.some((o) => o.label === line.label)).map((line) => ({ label: line.label, a: line.result, b: b.find((o) => o.label === line.label)!.result }));
    if (opts.json) io.stdout(`${JSON.stringify({ a: a.map(lineJson), b: b.map(lineJson) }, null, 2)}\n`);
    else io.stdout(`A = ${plan.host}:${plan.port}, B = ${compare.host}:${compare.port}\n${comparisonTable(rows, 'A', 'B')}\n`);
  } else if (opts.json) {
    io.stdout(`${JSON.stringify(a.map(lineJson), null, 2)}\n`);
  }
  let code: number = EXIT.ok;
  for (const line of [...a, ...b]) code = Math.max(code, exitCodeFor(line.result) === EXIT.failed ? 100 : exitCodeFor(line.result));
  for (const [lines, target] of [[a, plan], [b, compare]] as const) {
    for (const line of lines) {
      const where = compare ? `${target!.host}:${target!.port} ` : '';
      if (line.result.failure) io.stderr(`respbench: ${where}${line.label}: ${line.result.failure.message}\n`);
      else if (line.result.errors > 0 && (compare || opts.json || opts.csv)) {
        io.stderr(`respbench: ${where}${line.label}: ${line.result.errors} error replies, first: ${line.result.firstError}\n`);
      }
    }
  }
  return code === 100 ? EXIT.failed : code;
}

function lineJson(line: SuiteLine) {
  return { test: line.test, label: line.label, result: line.result };
}

/** Runs the program on argv; resolves to the exit status. */
export async function main(argv: string[], io: CliIo = defaultIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof Exit) return err.code;
    if (err instanceof UsageError) {
      io.stderr(`respbench: ${err.message}\n`);
      return EXIT.usage;
    }
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return EXIT.ok;
      return EXIT.usage;
    }
    io.stderr(`respbench: ${(err as Error).message}\n`);
    return EXIT.failed;
  }
}
