/**
 * --reconnect (issue 12, item 5) against a real redis-server, through both
 * engines: connections dropped mid-run by `CLIENT KILL TYPE normal` and by a
 * server killed and started again on the same port and directory are opened
 * again (the handshake redone: the server has a password), the run finishes,
 * reconnects, time down and requests lost in flight are reported, and what
 * the server acknowledged is still there: no lost writes in the run's own
 * --verify-get, and a get --verify-get --no-preload over the keyspace after
 * it passes. Without --reconnect a drop ends the run (exit 1) as before.
 *
 * "Acknowledged" across a restart needs persistence that has it on disk
 * before the reply: the restarted server runs with appendonly yes and
 * appendfsync always, and is killed with SIGKILL (no shutdown save).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ioEngines } from './helpers/engines.js';
import { freePort, liveProcesses, runCli, waitForPort, type CliRun } from './helpers/servers.js';

const PASSWORD = 'rc-5b1e-secretpw';
/** Small enough that the run after the drop rewrites every key several times. */
const KEYSPACE = 1000;
const CONNECTIONS = 4;

/** A redis-server that can be killed and started again on the same port and directory. */
interface Restartable {
  port: number;
  dir: string;
  proc: ChildProcess | null;
  /** A unix socket the server also listens on, if asked for. */
  socket: string | null;
}

const servers: Restartable[] = [];

function launch(s: Restartable): Promise<void> {
  s.proc = spawn(
    'redis-server',
    ['--port', String(s.port), '--bind', '127.0.0.1', '--dir', s.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--requirepass', PASSWORD, ...(s.socket ? ['--unixsocket', s.socket] : [])],
    { stdio: 'ignore' },
  );
  return waitForPort(s.port);
}

async function startServer(unixSocket = false): Promise<Restartable> {
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-reconnect-'));
  const s: Restartable = { port: await freePort(), dir, proc: null, socket: unixSocket ? path.join(dir, 'redis.sock') : null };
  servers.push(s);
  await launch(s);
  return s;
}

function kill(s: Restartable): Promise<void> {
  const p = s.proc;
  s.proc = null;
  if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    p.once('exit', () => resolve());
    p.kill('SIGKILL');
  });
}

afterEach(async () => {
  for (const s of servers.splice(0)) {
    await kill(s);
    rmSync(s.dir, { recursive: true, force: true });
    expect(liveProcesses(`redis-server 127.0.0.1:${s.port}`)).toEqual([]);
  }
});

function cli(s: Restartable, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(s.port), '-a', PASSWORD, '--no-auth-warning', ...args], { encoding: 'utf8' });
  return r.stdout.trim();
}

/** Waits until the run's connections are logged in (named respbench by the handshake). */
async function untilConnected(s: Restartable, count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const named = cli(s, 'CLIENT', 'LIST', 'TYPE', 'normal').split('\n').filter((l) => l.includes('name=respbench')).length;
    if (named >= count) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the run never connected');
}

/**
 * Waits until the run's SETs have reached the server (it holds `keys` keys): a kill before any reply would be a
 * run that got nothing, which is a failure (issue 20, item 4), not the drop mid-run these tests make.
 */
async function untilWritten(s: Restartable, keys: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (Number(cli(s, 'DBSIZE')) >= keys) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the run never wrote ${keys} keys`);
}

function bench(engine: string, s: Restartable, args: string[]): Promise<CliRun> {
  const target = s.socket ? ['-s', s.socket] : ['--port', String(s.port)];
  return runCli(['--engine', engine, ...target, '-a', PASSWORD, '--timeout', '10s', '--seed', '7', '-r', String(KEYSPACE), '--key-pattern', 'sequential', ...args], 90_000);
}

function parse(run: CliRun): any {
  try {
    return JSON.parse(run.stdout);
  } catch {
    throw new Error(`no JSON (exit ${run.code}): ${run.stderr}${run.stdout}`);
  }
}

/**
 * A mixed run with --verify-get for `duration`, with `disturb` done once its
 * connections are up (about 0.3 s in). 2 s leaves a CLIENT KILL's reconnects
 * (at the 100 ms default backoff) more than a second of run to happen in; a
 * server restart, which waits for a new redis-server, is given 4 s.
 */
async function runDisturbed(engine: string, s: Restartable, extra: string[], disturb: () => Promise<void>, duration = '2s') {
  const running = bench(engine, s, ['--mode', 'mixed', '--verify-get', '--duration', duration, '-c', String(CONNECTIONS), '-P', '16', '--json', ...extra]);
  await untilConnected(s, CONNECTIONS);
  await new Promise((r) => setTimeout(r, 300));
  await disturb();
  const run = await running;
  return { run, result: parse(run) };
}

/** Every key of the keyspace holds the value derived from it: what was acknowledged is there. */
async function expectEveryKeyVerifies(engine: string, s: Restartable): Promise<void> {
  const run = await bench(engine, s, ['--mode', 'get', '--verify-get', '--no-preload', '-n', String(KEYSPACE), '-c', '1', '--json']);
  const r = parse(run);
  expect(run.code, run.stderr).toBe(0);
  expect(r).toMatchObject({ ok: KEYSPACE, misses: 0, mismatches: 0, failure: null });
}

describe.each(ioEngines())('engine %s', (engine) => {
  it('CLIENT KILL TYPE normal mid-run: --reconnect logs in again and goes on; lost, reconnects and time down are reported; what was acknowledged verifies', async () => {
    const s = await startServer();
    const { run, result } = await runDisturbed(engine, s, ['--reconnect'], async () => {
      cli(s, 'CLIENT', 'KILL', 'TYPE', 'normal');
    });
    expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.complete).toBe(true);
    expect(result.reconnects).toBeGreaterThanOrEqual(CONNECTIONS);
    expect(result.downNs).toBeGreaterThan(0);
    expect(result.lost).toBeGreaterThanOrEqual(0);
    expect(result.lost).toBeLessThanOrEqual(result.reconnects * 16);
    expect(result.plan.reconnect).toEqual({ attempts: 10, backoffMs: 100 });
    // Requests went on after the drop, on logged-in connections (NOAUTH would have ended the run).
    expect(result.errors).toBe(0);
    expect(result.mismatches).toBe(0);
    expect(result.lostWrites).toBe(0);
    expect(run.stdout.includes(PASSWORD)).toBe(false);
    await expectEveryKeyVerifies(engine, s);
  });

  it('over a unix socket (-s): CLIENT KILL mid-run, --reconnect opens the socket again and goes on', async () => {
    const s = await startServer(true);
    const { run, result } = await runDisturbed(engine, s, ['--reconnect'], async () => {
      cli(s, 'CLIENT', 'KILL', 'TYPE', 'normal');
    });
    expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.plan.socket).toBe(s.socket);
    expect(result.reconnects).toBeGreaterThanOrEqual(CONNECTIONS);
    expect(result).toMatchObject({ errors: 0, mismatches: 0, lostWrites: 0 });
    await expectEveryKeyVerifies(engine, s);
  });

  it('the server restarted on the same port and directory (appendfsync always): --reconnect waits it out, acknowledged writes survive', async () => {
    const s = await startServer();
    const { run, result } = await runDisturbed(engine, s, ['--reconnect', '--reconnect-backoff', '50ms'], async () => {
      await kill(s);
      await new Promise((r) => setTimeout(r, 300));
      await launch(s);
    }, '4s');
    // A restarted Redis accepts connections while it loads its AOF and answers
    // -LOADING meanwhile: those few replies are error replies (exit 3), and
    // nothing else is.
    if (result.errors > 0) {
      expect(result.firstError).toMatch(/^LOADING/);
      expect(run.code, run.stderr).toBe(3);
    } else expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.reconnects).toBeGreaterThanOrEqual(CONNECTIONS);
    // Each connection was down at least the 300 ms the server was.
    expect(result.downNs).toBeGreaterThan(CONNECTIONS * 250e6);
    expect(result.mismatches).toBe(0);
    expect(result.lostWrites).toBe(0);
    await expectEveryKeyVerifies(engine, s);
  });

  it('without --reconnect a drop ends the run as before: exit 1, the closed connection named, no reconnect figures', async () => {
    const s = await startServer();
    const { run, result } = await runDisturbed(engine, s, [], async () => {
      cli(s, 'CLIENT', 'KILL', 'TYPE', 'normal');
    });
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('closed');
    expect(result.failure.message).toMatch(/connection closed by server after \d+ replies/);
    expect(result).not.toHaveProperty('reconnects');
    expect(result).not.toHaveProperty('lost');
    expect(result.plan).not.toHaveProperty('reconnect');
  });

  it('a server that does not come back: the run ends after --reconnect-attempts with one line and exit 1; the human output says what was lost', async () => {
    const s = await startServer();
    const running = bench(engine, s, ['--mode', 'set', '--duration', '20s', '-c', '1', '-P', '8', '--reconnect', '--reconnect-attempts', '3', '--reconnect-backoff', '20ms']);
    await untilConnected(s, 1);
    await untilWritten(s, 16);
    await kill(s);
    const run = await running;
    expect(run.code).toBe(1);
    expect(run.ms).toBeLessThan(15_000);
    expect(run.stdout).toMatch(/reconnects 0 · down \d+\.\d ms \(summed over connections\) · lost \d+ \(in flight when a connection dropped; in no figure\)/);
    expect(run.stdout).toMatch(/^FAILED \(closed\): the figures above cover the \d+ replies received$/m);
    expect(run.stdout).not.toMatch(/not reconnected/);
    const errLines = run.stderr.trim().split('\n');
    expect(errLines).toHaveLength(1);
    expect(errLines[0]).toMatch(/^respbench: connection 0 \([^)]+\): connection closed by server after \d+ replies.*; not reconnected after 3 attempts \(--reconnect-attempts\), the last: connection refused by 127\.0\.0\.1:\d+/);
  });

  it('--duration ends while a connection waits for its next attempt: the run ends on time, no failure, the time down reported', async () => {
    const s = await startServer();
    const running = bench(engine, s, ['--mode', 'set', '--duration', '2s', '-c', '1', '-P', '8', '--reconnect', '--reconnect-attempts', '100', '--reconnect-backoff', '1s', '--json']);
    await untilConnected(s, 1);
    await untilWritten(s, 16);
    await kill(s);
    const run = await running;
    const result = parse(run);
    expect(run.code, run.stderr).toBe(0);
    expect(result.failure).toBeNull();
    expect(result.reconnects).toBe(0);
    expect(result.downNs).toBeGreaterThan(0);
    expect(result.elapsedSec).toBeLessThan(2.5);
    expect(run.ms).toBeLessThan(8000);
  });
});

describe('reconnect flags', () => {
  for (const [args, text] of [
    [['--reconnect-attempts', '5'], '--reconnect-attempts needs --reconnect'],
    [['--reconnect-backoff', '1s'], '--reconnect-backoff needs --reconnect'],
    [['--reconnect', '--reconnect-attempts', '0'], '--reconnect-attempts must be a whole number from 1 to 1000000 (got "0")'],
    [['--reconnect', '--reconnect-backoff', 'soon'], '--reconnect-backoff must be a duration, a number with a unit us, ms, s, m or h (e.g. 500us, 10ms, 2s, 5m), up to 24h, more than 0 (got "soon")'],
  ] as const) {
    it(`${args.join(' ')}: one line, exit 2`, async () => {
      const run = await runCli(['--port', '1', '-n', '1', ...args]);
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(`respbench: ${text}`);
    });
  }
});
