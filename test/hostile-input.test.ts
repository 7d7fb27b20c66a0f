/**
 * Input a hostile user tries (issue 10, items 1 and 10), through both
 * engines: the template grammar (docs/workload.md) decides the same in both
 * and a bad template is a usage error before any engine runs; control
 * characters in a key prefix reach the server as bytes but never the
 * terminal raw; invalid UTF-8 on the command line is refused; bracketed IPv6
 * targets work; a too-low open-file limit is one line; Ctrl-C in the suite
 * marks the CSV row and does not go on to the --compare target.
 */
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { STACK_TRACE, waitFor } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { CLI, cliArgs, commandsProcessed, runCli, useRedis } from './helpers/servers.js';

/** Nothing listens here: a run that got past validation would exit 1, not 2. */
// (Port 1: a freed port could be another test file's server by the time it is used, as files run side by side.)
const deadPort = '1';
/** Listens on 127.0.0.1 and ::1. */
const redis = useRedis(['--bind', '127.0.0.1', '::1']);
/** The --compare target B. */
const redisB = useRedis(['--bind', '127.0.0.1', '::1']);

function lines(text: string): string[] {
  return text.split('\n').filter((l) => l.length > 0);
}

function expectUsageError(run: { code: number | null; stdout: string; stderr: string }, flag: string): void {
  const err = lines(run.stderr);
  expect({ code: run.code, lines: err.length, stdout: run.stdout }, run.stderr).toEqual({ code: 2, lines: 1, stdout: '' });
  expect(err[0]).toMatch(/^respbench: /);
  expect(err[0]).toContain(flag);
  expect(run.stderr).not.toMatch(STACK_TRACE);
  // The message shows the bad text escaped, never raw.
  expect(err[0]).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u00a0\u2028\u2029\ufeff]/);
}

/** [what, flags, the flag the message names]: each is refused the same way whichever engine is asked for. */
const BAD_TEMPLATES: Array<[string, string[], string]> = [
  ['U+00A0 between arguments', ['--set-cmd', 'SET\u00a0__key__ __data__'], '--set-cmd'],
  ['U+0085 between arguments', ['--set-cmd', 'SET __key__\u0085__data__'], '--set-cmd'],
  ['U+FEFF before the name', ['--get-cmd', '\ufeffGET __key__'], '--get-cmd'],
  ['U+2003 as an argument', ['--set-cmd', 'SET __key__ \u2003'], '--set-cmd'],
  ['a newline between arguments', ['--set-cmd', 'SET __key__\n__data__'], '--set-cmd'],
  ['ESC outside quotes', ['--get-cmd', 'GET __key__ \u001b[31m'], '--get-cmd'],
  ['an unclosed double quote', ['--set-cmd', 'HSET __key__ "my field __data__'], '--set-cmd'],
  ['an unclosed single quote', ['--get-cmd', "HGET __key__ 'f"], '--get-cmd'],
  ['text after a closing quote', ['--set-cmd', 'HSET __key__ "f"x __data__'], '--set-cmd'],
  ['an empty command name', ['--get-cmd', '"" __key__'], '--get-cmd'],
  ['a placeholder in single quotes only', ['--get-cmd', "GET '__key__'"], '--get-cmd'],
  ['-t with a quote in the prefix', ['-t', 'set,incr', '--key-prefix', 'a"b'], '--key-prefix'],
  ['-t with a prefix ending in _ (___rand_int__)', ['-t', 'mset', '--key-prefix', 'x_'], '--key-prefix'],
  ['-t with ESC in the prefix', ['-t', 'lpush', '--key-prefix', 'a\u001bb'], '--key-prefix'],
];

describe.each(engines())('engine %s', (engine) => {
  it.concurrent.each(BAD_TEMPLATES)('refuses %s: exit 2, one line naming the flag', async (_what, args, flag) => {
    const run = await runCli(['--engine', engine, '--port', deadPort, '--requests', '10', ...args], 30_000);
    expectUsageError(run, flag);
  });

  it('sends a quoted argument with its space and escapes, and verifies it', async () => {
    const r = redis.current;
    const prefix = `q:${engine}:`;
    const set = ['--set-cmd', 'HSET __key__ "my field\\t\\x41" __data__', '--get-cmd', "HGET __key__ 'my field\tA'"];
    const run = await runCli(['--engine', engine, '--port', String(r.port), '-q', '--mode', 'mixed', '--verify-get', '-n', '2000', '-r', '50', '--key-prefix', prefix, '--seed', '3', ...set]);
    expect(run.code, run.stderr).toBe(0);
    const fields = r.cli('HKEYS', `${prefix}7`);
    expect(fields === '' ? [] : fields.split('\n')).toEqual(['my field\tA']);
  });

  it('a key prefix with ESC, CR and LF reaches the server as bytes and the terminal escaped', async () => {
    const r = redis.current;
    const prefix = `p\u001b[31m\r\n${engine}:`;
    const run = await runCli(['--engine', engine, '--port', String(r.port), '--mode', 'set', '-n', '100', '-r', '10', '--key-pattern', 'sequential', '--key-prefix', prefix, '--host', '127.0.0.1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toMatch(/[\u001b\r]/);
    expect(run.stdout).toContain(`prefix p\\x1b[31m\\r\\n${engine}:`);
    expect(r.cli('EXISTS', `${prefix}9`)).toBe('1');
  });

  it("--host '[::1]' runs against a server on ::1 and shows the target bracketed", async () => {
    const r = redis.current;
    const run = await runCli(['--engine', engine, '--host', '[::1]', '--port', String(r.port), '--mode', 'set', '-n', '2000']);
    expect(run.code, run.stderr).toBe(0);
    expect(lines(run.stdout)[0]).toContain(`target [::1]:${r.port}`);
  });

  it("-t --compare '[::1]:PORT' runs the suite on both targets", async () => {
    const [a, b] = [redis.current, redisB.current];
    const before = commandsProcessed(b);
    const run = await runCli(['--engine', engine, '--port', String(a.port), '-t', 'ping,set', '-n', '2000', '--compare', `[::1]:${b.port}`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`vs [::1]:${b.port}`);
    expect(run.stdout).toMatch(/\| SET +\|/);
    expect(commandsProcessed(b) - before).toBeGreaterThanOrEqual(4000);
  });

  it('Ctrl-C in -t --csv marks the row cut short; with --compare target B is never started', async () => {
    const [a, b] = [redis.current, redisB.current];
    const long = ['--engine', engine, '--port', String(a.port), '-t', 'set,get', '-n', '50000000', '-P', '16'];
    for (const extra of [['--csv'], ['--compare', `127.0.0.1:${b.port}`]]) {
      const beforeB = commandsProcessed(b);
      const child = spawn(process.execPath, [CLI, ...long, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      const start = commandsProcessed(a);
      await waitFor('the suite to get going', () => commandsProcessed(a) - start > 5_000);
      child.kill('SIGINT');
      const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
      if (code === 'still running') child.kill('SIGKILL');
      expect(code, stderr).toBe(130);
      expect(stderr).not.toMatch(STACK_TRACE);
      if (extra[0] === '--csv') {
        const rows = lines(stdout);
        expect(rows[0]).toMatch(/^"test",/);
        expect(rows.slice(1)).toEqual([expect.stringMatching(/^"SET \(interrupted\)",/)]);
      } else {
        expect(stdout).toContain('(not run: interrupted)');
        expect(commandsProcessed(b) - beforeB).toBeLessThan(10);
      }
    }
  });
});

it('a flag with invalid UTF-8 bytes is refused naming it (not turned into U+FFFD)', async () => {
  for (const form of [`--key-prefix "$(printf 'a\\377b')"`, `--set-cmd="$(printf 'SET __key__ \\300')"`]) {
    const r = spawnSync('sh', ['-c', `exec "${process.execPath}" "${CLI}" --port ${deadPort} -n 10 ${form}`], { encoding: 'utf8' });
    expectUsageError({ code: r.status, stdout: r.stdout, stderr: r.stderr }, form.startsWith('--key') ? '--key-prefix' : '--set-cmd');
  }
  // U+FFFD typed as valid UTF-8 is text like any other.
  const ok = spawnSync('sh', ['-c', `exec "${process.execPath}" "${CLI}" --port ${deadPort} -n 10 --key-prefix "$(printf 'a\\357\\277\\275b')"`], { encoding: 'utf8' });
  expect(ok.status, ok.stderr).toBe(1);
});

/**
 * The lowest `ulimit -n` under which Node itself starts and opens a file:
 * below it, Node fails before any of respbench runs. Searched downwards, so
 * the one run that fails is the first limit Node cannot open a file under,
 * not the lower ones where Node crashes starting.
 */
let floor: number | undefined;
function nodeFloor(): number {
  if (floor !== undefined) return floor;
  const opensAFile = (n: number) => spawnSync('sh', ['-c', `ulimit -n ${n}; exec "${process.execPath}" -e 'require("node:fs").readFileSync("/proc/self/stat")'`]).status === 0;
  if (!opensAFile(32)) throw new Error('node cannot open a file under ulimit -n 32');
  let n = 32;
  while (n > 3 && opensAFile(n - 1)) n--;
  return (floor = n);
}

it.each(engines())('engine %s: under an open-file limit too low for the run, one line naming ulimit -n and exit 1 (no EMFILE stack trace)', (engine) => {
  // From Node's own floor up: out of descriptors while loading (the program, the addon, package.json), then while connecting.
  const lowest = nodeFloor();
  for (let n = lowest; n <= lowest + 6; n++) {
    const r = spawnSync('sh', ['-c', `ulimit -n ${n}; exec '${process.execPath}' '${CLI}' ${cliArgs(['--engine', engine, '--port', String(redis.current.port), '-n', '1000', '-c', '40', '-q']).join(' ')}`], { encoding: 'utf8' });
    expect(r.status, `ulimit -n ${n}: ${r.stderr}`).toBe(1);
    expect(lines(r.stderr), `ulimit -n ${n}`).toEqual([expect.stringMatching(/^respbench: .*(open files|open-file limit).*ulimit -n/)]);
    expect(r.stderr).not.toMatch(STACK_TRACE);
  }
});
