/**
 * Words that must not mislead (issue 20 item 11): a refused HELLO 3 is
 * called that, not a failed login; -u/--uri beside -h/-p/-s is refused
 * naming both; a bad `?db=` names the database; a unix socket path past
 * the kernel's limit says the limit (both engines, before connecting); a
 * study whose name makes a file name too long is refused before it starts.
 * The target is a real RESP server on loopback (a test target) that refuses
 * HELLO as some servers do.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STACK_TRACE } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { startRespServer, type RespServer } from './helpers/resp-server.js';
import { runCli } from './helpers/servers.js';

const REFUSAL = 'ERR HELLO is disabled on this server';
let server: RespServer;
let port = 0;

beforeAll(async () => {
  // Every command of the handshake gets the same refusal; HELLO comes first.
  server = await startRespServer(() => `-${REFUSAL}\r\n`);
  port = server.port;
});

const scratch = mkdtempSync(path.join(tmpdir(), 'respbench-words-'));
afterAll(() => {
  server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A socket path of `bytes` bytes under the scratch directory. */
function socketPath(bytes: number): string {
  const dir = `${scratch}/`;
  return dir + 's'.repeat(bytes - dir.length);
}

describe.each(engines())('engine %s', (engine) => {
  it('-3 against a server that refuses HELLO 3 says "HELLO 3 failed: <its reason>", not a failed login', async () => {
    const run = await runCli(['--engine', engine, '-p', String(port), '-3', '-n', '100', '-q', '--timeout', '5s']);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`HELLO 3 failed: ${REFUSAL}`);
    expect(run.stderr).not.toMatch(/authentication failed/);
  });

  it.each([
    ['-s', (p: string) => ['-s', p]],
    ['unix://', (p: string) => ['-u', `unix://${p}`]],
  ])('a unix socket path past 107 bytes (%s) says the limit, before connecting', async (_via, args) => {
    const run = await runCli(['--engine', engine, ...args(socketPath(130)), '-n', '100', '-q']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/a unix socket path is at most 107 bytes .*got 130 bytes/);
    // 107 bytes is a path the kernel takes: whatever follows, it is not the limit.
    const ok = await runCli(['--engine', engine, ...args(socketPath(107)), '-n', '100', '-q', '--timeout', '2s']);
    expect(ok.stderr).not.toMatch(/at most 107 bytes/);
    expect(ok.code).toBe(1);
  });
});

describe('flags and URIs that name the same thing', () => {
  it.each([
    [['-u', 'redis://127.0.0.1:1', '-p', '6380'], '-p/--port'],
    [['-u', 'redis://127.0.0.1:1', '-h', '10.0.0.1'], '-h/--host'],
    [['--uri=redis://127.0.0.1:1', '--host', '10.0.0.1'], '-h/--host'],
    [['-u', 'redis://127.0.0.1:1', '-s', '/tmp/x.sock'], '-s/--socket'],
    [['capacity', '--slo', 'p99<=1ms', '-u', 'redis://127.0.0.1:1', '-p', '6380'], '-p/--port'],
  ])('%j is refused naming both', async (args, flag) => {
    const run = await runCli(args);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`-u/--uri and ${flag} both name the server`);
  });

  it.each([
    ['redis://127.0.0.1:1?db=abc', /\?db= must be a database number from 0 to \d+ \(got "abc"\)/],
    ['unix:///tmp/x.sock?db=abc', /\?db= must be a database number/],
    ['redis://127.0.0.1:1/2?db=3', /\/2 and \?db=3 both name the database/],
    ['redis://127.0.0.1:1?db=1&db=2', /\?db=1 and \?db=2 both name the database: give one/],
    ['redis://127.0.0.1:1?dbx=3', /unknown query "dbx": the only query is \?db=N/],
  ])('%s names the database', async (uri, said) => {
    const run = await runCli(['-u', uri]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(said);
    expect(run.stderr).not.toMatch(/no host/);
  });

  it.each([
    ['redis://127.0.0.1:abc', /\(the port after the host must be a number from 1 to 65535\)/],
    ['redis://:pw1234@127.0.0.1:notaport/0', /\(the port after the host must be a number from 1 to 65535\)/],
    ['redis://::1:6379', /\(an IPv6 address goes in brackets: \[::1\]:6379\)/],
    ['redis://u:pw1234@:6379', /\(no host\)/],
  ])('%s names what is wrong with its host and port, and shows no password', async (uri, said) => {
    const run = await runCli(['-u', uri]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(said);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/pw1234/);
  });

  it('?db=N on a redis:// URI selects that database', async () => {
    const run = await runCli(['-u', `redis://127.0.0.1:${port}?db=3`, '-n', '10', '-q', '--timeout', '5s']);
    // The server refuses SELECT 3 (it refuses everything): the message names the database the URI chose.
    expect(run.stderr).toMatch(/cannot select database 3/);
  });
});

describe('a study whose name makes a file name too long', () => {
  it('is refused before anything starts: exit 2 naming the name, no connection, no file', async () => {
    const out = path.join(scratch, 'out');
    const file = path.join(scratch, 'long.yaml');
    writeFileSync(file, `name: ${'n'.repeat(230)}\ndefaults: { requests: 100 }\nscenarios:\n  - name: a\n    target: { address: '127.0.0.1:${port}' }\n`);
    const before = server.connections();
    const run = await runCli(['study', file, '--out', out, '--rounds', '1']);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/name .*too long to write: .* is \d+ bytes with its temp suffix, a file name holds 255/);
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(server.connections()).toBe(before);
    expect(readdirSync(out)).toEqual([]);
  });
});
