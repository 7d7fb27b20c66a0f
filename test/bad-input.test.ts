/**
 * Every bad flag value is a usage error: exit 2, one line on stderr that
 * names the flag, no stack trace, nothing on stdout, and no connection tried
 * (the port given has nothing listening, so a run would exit 1 instead).
 */
import { describe, expect, it } from 'vitest';
import { STACK_TRACE } from './faults/harness.js';
import { freePort, runCli } from './helpers/servers.js';

const port = String(await freePort());

/** [what is wrong, the arguments, text the one stderr line must contain] */
const cases: Array<[string, string[], string]> = [
  ['pipeline of zero', ['--pipeline', '0'], '--pipeline'],
  ['pipeline past the limit', ['--pipeline', '65537'], '--pipeline'],
  ['set ratio over 100', ['--set-ratio', '101'], '--set-ratio'],
  ['set ratio not a number', ['--set-ratio', 'half'], '--set-ratio'],
  ['unknown mode', ['--mode', 'foo'], '--mode'],
  ['port past 65535', ['--port', '70000'], '--port'],
  ['port zero', ['--port', '0'], '--port'],
  ['port not a number', ['--port', 'http'], '--port'],
  ['negative request count', ['--requests', '-5'], '--requests'],
  ['zero requests', ['--requests', '0'], '--requests'],
  ['fractional requests', ['--requests', '1.5'], '--requests'],
  ['requests in exponent notation', ['--requests', '1e6'], '--requests'],
  ['value size not a number', ['--value-size', 'abc'], '--value-size'],
  ['absurd value size', ['--value-size', '999999999999'], '--value-size'],
  ['value size zero', ['--value-size', '0'], '--value-size'],
  ['value size range upside down', ['--value-size', '100-10'], '--value-size'],
  ['negative seed', ['--seed', '-1'], '--seed'],
  ['seed past 32 bits', ['--seed', '4294967296'], '--seed'],
  ['timeout with an unknown unit', ['--timeout', '5x'], '--timeout'],
  ['negative timeout', ['--timeout', '-1s'], '--timeout'],
  ['timeout past a day', ['--timeout', '25h'], '--timeout'],
  ['unknown engine', ['--engine', 'foo'], '--engine'],
  ['zero connections', ['-c', '0'], '--connections'],
  ['too many connections', ['--connections', '10001'], '--connections'],
  ['zero keyspace', ['--keyspace', '0'], '--keyspace'],
  ['zero threads', ['--threads', '0'], '--threads'],
  ['empty host', ['--host', ''], '--host'],
  ['unknown flag', ['--frobnicate'], '--frobnicate'],
  ['flag missing its value', ['--mode'], '--mode'],
  ['write template with an unknown placeholder', ['--set-cmd', 'SET __key__ __value__'], '--set-cmd'],
  ['write template without __key__', ['--set-cmd', 'SET mykey __data__'], '--set-cmd'],
  ['read template without __key__', ['--get-cmd', 'GET mykey'], '--get-cmd'],
  ['empty write command', ['--set-cmd', ''], '--set-cmd'],
  ['template starting with a placeholder', ['--get-cmd', '__key__ GET'], '--get-cmd'],
  ['--verify-get with a read that sends __data__', ['--verify-get', '--get-cmd', 'GETSET __key__ __data__'], '--get-cmd'],
  ['threads past the limit', ['--threads', '1000'], '--threads'],
  ['requests past 2^40', ['--requests', '99999999999999999999'], '--requests'],
  ['port in hex', ['--port', '0x50'], '--port'],
  ['seed with a decimal point', ['--seed', '1.0'], '--seed'],
  ['empty timeout', ['--timeout', ''], '--timeout'],
  ['short flag missing its value', ['-P'], '--pipeline'],
  ['--verify-get with a read that sends __rand_int__', ['--verify-get', '--get-cmd', 'HGET __key__ f__rand_int__'], '--get-cmd'],
  ['misspelt flag (the suggestion stays on the same line)', ['--pipline', '4'], '--pipline'],
  ['timeout that would round to 0 ms (and so mean off)', ['--timeout', '0.4ms'], '--timeout'],
  ['unknown key pattern', ['--key-pattern', 'hot'], '--key-pattern'],
  ['zipf exponent of zero', ['--key-pattern', 'zipf', '--zipf-exponent', '0'], '--zipf-exponent'],
  ['negative key stddev', ['--key-pattern', 'gaussian', '--key-stddev', '-3'], '--key-stddev'],
  ['unknown suite test', ['-t', 'set,frob'], '--tests'],
  ['--csv without -t', ['--csv'], '--csv'],
  ['--compare without a port', ['-t', 'set', '--compare', 'localhost'], '--compare'],
  ['-t with --verify-get (the suite has its own commands)', ['-t', 'set', '--verify-get'], '--verify-get'],
  ['-t with --mode', ['-t', 'set', '--mode', 'get'], '--mode'],
  ['-t with a key prefix holding a space', ['-t', 'lpush', '--key-prefix', 'my app:'], '--key-prefix'],
];

/** The case's flags after a harmless target and request count, unless the case sets them itself. */
function withTarget(args: string[]): string[] {
  const base = [];
  if (!args.includes('--port')) base.push('--port', port);
  if (!args.includes('--requests')) base.push('--requests', '10');
  return [...base, ...args];
}

describe('bad input is a usage error naming the flag (exit 2)', () => {
  it('has at least 30 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

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
