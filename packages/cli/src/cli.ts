/**
 * The `respbench` command line: the program's commands and flags, and `main`,
 * which turns what they throw into an exit status. Usage errors become one
 * line and exit 2. The actions live beside what they run: run-command.ts,
 * serve/command.ts, study/command.ts.
 */
import { createRequire } from 'node:module';
import { Command, CommanderError, Option } from 'commander';
import { registerCapacityCommand } from './capacity/command.js';
import { loadNativeEngine } from './engine-native.js';
import { Exit, EXIT } from './exit.js';
import { processIo, type CliIo } from './io.js';
import { loopUntilInterrupted, runCommand, type RunFlags } from './run-command.js';
import { runIdle } from './idle.js';
import { buildPlan, checkIdleFlags } from './validate.js';
import { addRunOptions } from './run-options.js';
import { addTelemetryOptions, runWithTelemetry, type TelemetryFlags } from './metrics/session.js';
import { registerMergeCommand } from './merge-command.js';
import { registerCompareCommand } from './compare/command.js';
import { registerServeCommand } from './serve/command.js';
import { registerSchemaCommand, registerStudyCommand } from './study/command.js';
import { registerCompletionCommand } from './completion.js';
import { SUITE_NAMES } from './suite.js';
import { firstOperand, flagsTakingValue, ownWords, showHelp, subcommandTypo } from './subcommand-words.js';
import { printable } from './printable.js';
import { UsageError } from './usage-error.js';
import { redactingIo, rememberSecret } from './secrets.js';
import { PASSWORD_ENV } from './validate.js';
import { outOfFilesText } from './open-files.js';

export type { CliIo } from './io.js';

const HELP_AFTER = `
Examples:
  respbench -h 10.0.0.5 -p 6379 -t set,get               redis-benchmark's tests, with its defaults (-c 50 -P 1 -d 3 -n 100000)
  respbench -n 100000 -r 1000 INCR counter:__rand_int__   one command, as redis-benchmark runs it
  respbench --embedded                                   try it against the built-in demo server
  respbench --port 6379 --mode set --requests 100000     Redis, writes
  respbench --port 6379 --mode get --verify-get          Redis, reads checked against what was written
  respbench --port 8888 --set-cmd RSET --get-cmd RGET    a kvstore (RSET key value / RGET key)
  respbench --set-cmd 'HSET __key__ field __data__' --get-cmd 'HGET __key__ field'   Redis hashes

-t and a command on the line follow redis-benchmark 7: its defaults for what
you leave out (-c 50 -P 1 -n 100000 -d 3), its key names (key:__rand_int__,
counter:__rand_int__, mylist, myset, myhash, myzset), and without -r
__rand_int__ stays the literal text (one key). Additions of respbench's:
per-request latency percentiles, an errors column in --csv, --compare.

--requests is the total over all connections. avg us/op is elapsed / requests
(inverse throughput); the p50..max columns are per-request latency, reply parsed
minus request written, even when pipelined.

Durations (--timeout, --duration, --warmup, --interval, --reconnect-backoff,
--ramp-connections, --slo bounds, serve --service-time, study files) are a
number with a unit: us, ms, s, m or h (500us, 10ms, 2s, 5m); a bare number is
refused, except 0 where it turns a thing off. A run is bounded by -n or by
--duration, not both.

respbench help [command] is help. A first word a letter or two from a
subcommand (srve, hlep) is refused as a typo; to benchmark such a word as a
Redis command, put -- before it (respbench -p 6379 -- SRVE x). Words in
capitals (SAVE, DEL) are always Redis commands.

Exit status: 0 clean; 1 could not run or the run broke off (refused, closed,
protocol error, timeout); 2 bad usage; 3 the server answered with error
replies; 4 reads did not verify (--verify-get); 5 a gate was missed (--slo,
compare --fail-if); 130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).

Saved results: --json-file run.json, then respbench compare base.json run.json.
`;

export function buildProgram(io: CliIo = processIo, argv: readonly string[] = []): Command {
  const program = new Command('respbench');
  program
    // -h is the host, as in redis-benchmark and redis-cli.
    .helpOption('--help', 'show this help')
    .description('Load generator for servers that speak the Redis protocol (RESP): pipelined, verified, per-request latency')
    .enablePositionalOptions()
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      // Commander's own usage errors, as one line in the same voice as ours.
      // An unknown `--flag=value` is shown without its value: it may be a mistyped --pass=….
      outputError: (text, write) => write(`respbench: ${text.replace(/^error: /, '').replace(/('--?[\w-]+)=[^']*'/g, "$1=…'").replace(/\s*\n\s*/g, ' ').trim()} (see --help)\n`),
    })
    .exitOverride()
    .showSuggestionAfterError(true);
  addRunOptions(program)
    .option('--json', 'print the RunResult as JSON on one line (stable field names; histograms as HdrHistogram V2 base64); --json=pretty indents it', false)
    // Result files (issue 22): one block, so --json-out-file and other aliases can sit beside it.
    .option('--pretty', 'with --json or --json-file: indented JSON for people (same as --json=pretty)', false)
    .option('--json-file <path>', 'also write the result as JSON to this file, whole (a temp file renamed over it): the file merge and compare read')
    // CI gates (issue 22): one block; the grammar is capacity's --slo (capacity/slo.ts).
    .option('--slo <conditions>', "a gate every command (with -t: every test) must meet, e.g. 'p99<=1ms,ops>=100000,errors<=0.1%': exit 5 and a line per missed figure otherwise")
    .option('--junit <file>', 'write the gates as JUnit XML: a testcase per command (with -t: per test), a failure with the missed figures')
    .option('--markdown <file>', 'write the figures and gates as a Markdown table (for $GITHUB_STEP_SUMMARY; with --slo or --junit and no --markdown, appended there when it is set)')
    .option('-x, --repeat <n>', 'run the same run n times: the figures are over the n rounds (merged histograms), with mean ± sd of each; compare uses the rounds\' spread as its noise')
    // memtier_benchmark's spellings of the two above, hidden from --help (its -x is --run-count already).
    .addOption(memtierAlias('--json-out-file <path>', 'jsonFile', 'memtier: --json-file'))
    .addOption(memtierAlias('--run-count <n>', 'repeat', 'memtier: -x/--repeat'))
    .option('-q, --quiet', "redis-benchmark's -q: no header (with -t: on stderr) or progress, and instead of the table one line per -t test, per command on the line, or per command row of a run (SET: 93457.95 requests per second, p50=0.263 msec), then any error, verification or failure lines; --json is unchanged", false)
    .option('--percentiles <list>', 'latency percentiles for the table and --json (percentilesUs), e.g. 50,90,99,99.9,99.99', '50,90,99,99.9')
    .option('--client-index <i>', 'several load machines: this one is machine i (0-based) of --client-count; it runs its share of the connections of one run with -c × count connections (needs --seed); respbench merge adds the results')
    .option('--client-count <n>', 'several load machines: how many run together (see --client-index)')
    .option('--html <file>', 'also write the run as an HTML page: metadata, figures per command, throughput and p50/p99 over time (the series)')
    .option('--cpus <list>', 'pin the load to these CPUs, e.g. 0-1,3 (Linux): the native engine\'s worker threads and this process; leave the server other cores')
    .option('--hdr-log <prefix>', 'write HdrHistogram interval logs (V2 compressed, as HistogramLogProcessor reads): <prefix>.<COMMAND>.hlog per interval and <prefix>.<COMMAND>.run.hlog for the whole run, per command and Totals; values in ns')
    .option('--interval <duration>', 'time series interval (default 1s; --json has it as `series`); given: one line per interval while it runs')
    .option('--embedded', 'run against the built-in demo/test server (respbench serve) on a free port', false)
    .option('-t, --tests <list>', `the command suite, redis-benchmark's tests, run in its order: ${SUITE_NAMES.join(',')} (ping = both pings, lrange = all four)`)
    .option('--csv', 'with -t: print CSV in redis-benchmark --csv columns', false)
    .option('--compare <[name=]host:port>', 'with -t: run the suite against this second target too; ratios are this target as % of the second (e.g. redis=127.0.0.1:6379)')
    .option('--target-name <name>', 'with --compare: what to call this target in the table (default host:port)')
    .option('--version', 'print the version, the engines available here and the Node/napi versions', false)
    .option('-l, --loop', "run again and again (each result printed) until interrupted or a run fails (redis-benchmark's -l)", false)
    .option('-I, --idle', "open -c connections (handshake and all) and hold them, sending nothing, until interrupted (redis-benchmark's -I)", false)
    .option('--precision <n>', "decimal places of the latency figures, 0..6 (redis-benchmark's --precision): the table's us (default 1), -q's msec (default 3)");
  addTelemetryOptions(program)
    .argument('[redis-command...]', 'a command to benchmark, as in redis-benchmark (e.g. INCR counter:__rand_int__); options go before it')
    // Words after the command are its arguments, not respbench's options (as in redis-benchmark).
    .passThroughOptions()
    .addHelpText('after', HELP_AFTER)
    .action(async (command: string[], opts: RunFlags & TelemetryFlags & { version: boolean; loop: boolean; idle: boolean }, cmd: Command) => {
      if (opts.version) {
        io.stdout(`${versionText()}\n`);
        return;
      }
      const given = (name: string) => cmd.getOptionValueSource(name) === 'cli';
      if (opts.idle) {
        checkIdleFlags(opts, command);
        await runIdle(buildPlan(opts, process.env).plan, io);
      }
      const once = () => runCommand({ ...opts, command, argv }, io, given);
      await runWithTelemetry(opts, io, opts.quiet, () => (opts.loop ? loopUntilInterrupted(once) : once()));
    });
  registerServeCommand(program, io);
  registerMergeCommand(program, io, argv);
  registerCompareCommand(program, io);
  registerStudyCommand(program, io);
  registerSchemaCommand(program, io);
  registerCompletionCommand(program, io);
  registerCapacityCommand(program, io);
  return program;
}

/** A hidden flag of memtier's that sets one of ours. */
function memtierAlias(flags: string, attribute: string, help: string): Option {
  const o = new Option(flags, help).hideHelp();
  o.attributeName = () => attribute;
  return o;
}

/** `--version`: what runs here, for a bug report. */
export function versionText(): string {
  const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
  const native = loadNativeEngine();
  const engines = native.engine ? 'native, js (auto picks native)' : `js only (native: ${native.reason})`;
  return [`respbench ${pkg.version}`, `engines: ${engines}`, `node ${process.versions.node} · napi ${process.versions.napi ?? 'n/a'} · ${process.platform}-${process.arch}`].join('\n');
}

/**
 * `-h`/`--host` among the options (before a command or subcommand) with no
 * value after it; null otherwise. Words after the first non-option are the
 * command's own arguments.
 */
function hostFlagWithoutValue(program: Command, argv: string[]): string | null {
  const { required, optional } = flagsTakingValue(program);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-')) return null;
    if (a === '-h' || a === '--host') return i === argv.length - 1 || argv[i + 1].startsWith('-') ? a : null;
    if (required.has(a) || optional.has(a)) i++;
  }
  return null;
}

/**
 * `--json=pretty` (and `--json=compact`, the default) as the two boolean
 * flags commander knows: an optional value on --json would swallow the
 * command after it (`--json INCR counter` is a command, not a style).
 * Only among the options, before `--`.
 */
export function jsonStyleArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  let options = true;
  for (const a of argv) {
    if (a === '--') options = false;
    const style = options ? /^--json=(.*)$/.exec(a) : null;
    if (!style) out.push(a);
    else if (style[1] === 'pretty') out.push('--json', '--pretty');
    else if (style[1] === 'compact') out.push('--json');
    else throw new UsageError(`--json takes =pretty or =compact (the default), got ${printable(JSON.stringify(style[1]))}`);
  }
  return out;
}

/** Runs the program on argv; resolves to the exit status. */
export async function main(givenArgv: string[], givenIo: CliIo = processIo): Promise<number> {
  // The last net: no password this process was given reaches its output, whatever path printed it.
  const io = redactingIo(givenIo);
  rememberSecret(process.env[PASSWORD_ENV]);
  let argv: string[];
  try {
    argv = jsonStyleArgs(givenArgv);
  } catch (err) {
    io.stderr(`respbench: ${printable((err as Error).message)}\n`);
    return EXIT.usage;
  }
  const program = buildProgram(io, argv);
  // `-h` alone used to be help; now that it is the host, say so instead of a bare "argument missing".
  const bareHost = hostFlagWithoutValue(program, argv);
  if (bareHost) {
    io.stderr(`respbench: ${bareHost} needs a host (-h is the host, as in redis-benchmark; help is --help)\n`);
    return EXIT.usage;
  }
  try {
    // The first word: `help`, a subcommand, a near miss of one (refused), or a Redis command.
    const first = firstOperand(program, argv);
    if (first?.word === 'help') {
      showHelp(program, argv.slice(first.index + 1));
      return EXIT.ok;
    }
    const typo = first ? subcommandTypo(first.word, ownWords(program)) : null;
    if (typo) throw typo;
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof Exit) return err.code;
    if (err instanceof UsageError) {
      io.stderr(`respbench: ${printable(err.message)}\n`);
      return EXIT.usage;
    }
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help' || err.code === 'commander.version') return EXIT.ok;
      return EXIT.usage;
    }
    io.stderr(`respbench: ${outOfFilesText(err) ?? printable((err as Error).message)}\n`);
    return EXIT.failed;
  }
}
