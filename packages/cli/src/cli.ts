/**
 * The `respbench` command line: the program's commands and flags, and `main`,
 * which turns what they throw into an exit status. Usage errors become one
 * line and exit 2. The actions live beside what they run: run-command.ts,
 * serve/command.ts, study/command.ts.
 */
import { Command, CommanderError } from 'commander';
import { Exit, EXIT } from './exit.js';
import { processIo, type CliIo } from './io.js';
import { runCommand, type RunFlags } from './run-command.js';
import { addRunOptions } from './run-options.js';
import { registerServeCommand } from './serve/command.js';
import { registerStudyCommand } from './study/command.js';
import { SUITE_NAMES } from './suite.js';
import { UsageError } from './validate.js';

export type { CliIo } from './io.js';

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
replies; 4 reads did not verify (--verify-get); 130/143/129 interrupted
(SIGINT/SIGTERM/SIGHUP).
`;

export function buildProgram(io: CliIo = processIo): Command {
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
  registerServeCommand(program, io);
  registerStudyCommand(program, io);
  return program;
}

/** Runs the program on argv; resolves to the exit status. */
export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
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
