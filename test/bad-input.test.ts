/**
 * Every bad flag value is a usage error: exit 2, one line on stderr that
 * names the flag, no stack trace, nothing on stdout, and no connection tried
 * (the port given has nothing listening, so a run would exit 1 instead).
 */
import { describe, expect, it } from 'vitest';
import { STACK_TRACE } from './faults/harness.js';
import { runCli } from './helpers/servers.js';

// Port 1: nothing on this machine listens there, whatever other test files start beside this one.
const port = '1';

/**
 * [what is wrong, the arguments, text the one stderr line must contain]: one
 * case per way a usage error reaches the user (a flag value, commander's own
 * parsing, a suggestion, the suite's flags). Every bad value buildPlan
 * refuses is a unit test in packages/cli/test/validate.test.ts.
 */
const cases: Array<[string, string[], string]> = [
  ['pipeline of zero', ['--pipeline', '0'], '--pipeline'],
  ['empty host', ['--host', ''], '--host'],
  ['unknown flag', ['--frobnicate'], '--frobnicate'],
  ['flag missing its value', ['--mode'], '--mode'],
  ['misspelt flag (the suggestion stays on the same line)', ['--pipline', '4'], '--pipline'],
  ['--compare without a port', ['-t', 'set', '--compare', 'localhost'], '--compare'],
  ['-t with --mode', ['-t', 'set', '--mode', 'get'], '--mode'],
  ['a mix weight of zero', ['--command', 'GET', '--weight', '0'], '--weight'],
  ['a negative mix weight', ['--command', 'GET', '--weight', '-3'], '--weight'],
  ['--weight without a --command before it', ['--weight', '3', '--command', 'GET'], '--weight'],
  ['a mix template that does not parse', ['--command', 'GET "__key__'], '--command'],
  ['an unknown key pattern for a mix command', ['--command', 'GET', '--command-key-pattern', 'zipff'], '--command-key-pattern'],
  ['--command with --mode', ['--mode', 'get', '--command', 'GET'], '--mode'],
  ['--multi-key-get of zero keys', ['--multi-key-get', '0'], '--multi-key-get'],
  ['--multi-key-get with --get-cmd', ['--multi-key-get', '3', '--get-cmd', 'HGET __key__ f'], '--multi-key-get'],
  ['--ramp-connections without its every', ['--duration', '1s', '-c', '4', '--ramp-connections', '1:1'], '--ramp-connections'],
  ['--ramp-connections start above -c', ['--duration', '1s', '-c', '4', '--ramp-connections', '5:1:1s'], '--ramp-connections'],
  ['--ramp-connections without --duration', ['-c', '4', '--ramp-connections', '1:1:1s'], '--ramp-connections'],
  ['--ramp-connections with --rate', ['--duration', '1s', '-c', '4', '--rate', '100', '--ramp-connections', '1:1:1s'], '--ramp-connections'],
  // A typo of a subcommand is never sent to a server as a command (it would exit 1 here: nothing listens).
  ['a subcommand typo after the options', ['srve', '--port', '7330'], 'did you mean `respbench serve`?'],
  ['a duration without its unit', ['--timeout', '5'], '--timeout must be a duration'],
  ['-n beside --duration', ['--duration', '1s'], '-n/--requests and --duration do not go together'],
  // The seed -p names would be dropped without a word beside --cluster-node (found by an independent hostile pass).
  ['--cluster-node beside -p', ['--cluster', '--cluster-node', '127.0.0.1:1'], '--cluster-node and -p/--port both name the seed'],
  ['--cluster-node beside -h', ['--cluster-node', '127.0.0.1:1', '-h', '127.0.0.1'], '--cluster-node and -h/--host both name the seed'],
];

/** The case's flags after a harmless target and request count, unless the case sets them itself. */
function withTarget(args: string[]): string[] {
  const base = [];
  if (!args.includes('--port')) base.push('--port', port);
  if (!args.includes('--requests')) base.push('--requests', '10');
  return [...base, ...args];
}

describe('bad input is a usage error naming the flag (exit 2)', () => {
  it.concurrent.each(cases)('%s', async (_what, args, flag) => {
    await expectUsageError(args, flag);
  });
});

async function expectUsageError(args: string[], flag: string): Promise<void> {
  const run = await runCli(withTarget(args), 20_000);
  const lines = run.stderr.split('\n').filter((l) => l.length > 0);
  expect({ code: run.code, lines: lines.length }).toEqual({ code: 2, lines: 1 });
  expect(lines[0]).toMatch(/^respbench: /);
  expect(lines[0]).toContain(flag);
  expect(run.stderr).not.toMatch(STACK_TRACE);
  expect(run.stdout).toBe('');
}
