/**
 * Ctrl-C, `kill` and a closed terminal: a running respbench prints what it
 * measured so far, marked as interrupted, and exits 130 (SIGINT), 143
 * (SIGTERM) or 129 (SIGHUP), however many signals follow the first; nothing
 * it started (the embedded demo server) outlives it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { childPids, isAlive, STACK_TRACE, waitFor } from './faults/harness.js';
import { engines, ioEngines } from './helpers/engines.js';
import { CLI, commandsProcessed, spawnCli, liveProcesses, redisPerTest, type RedisServer, REPO, tcpSocketsOf } from './helpers/servers.js';

let redis: RedisServer | null = null;
/** Each test's redis-server is stopped after it, and must leave no process behind. */
const startRedis = redisPerTest();

interface Exited {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts respbench; `exited` resolves when it ends (killed after 30 s at most). */
const startCli = (args: string[]) => spawnCli(args);

/** True once `pid` holds an established TCP connection: the run is under way (its signal handlers are in). */
function connected(pid: number): boolean {
  return tcpSocketsOf(pid).some((socket) => socket.state === '01');
}

/** A run far longer than any test waits for. */
const LONG = ['--mode', 'set', '--requests', '50000000', '--pipeline', '16', '--timeout', '5s'];

const signals: Array<[NodeJS.Signals, number]> = [
  ['SIGINT', 130],
  ['SIGTERM', 143],
];

describe.each(ioEngines())('engine %s', (engine) => {
  it.each(signals)('%s mid-run prints the partial result marked interrupted and exits %i', async (signal, code) => {
    redis = await startRedis();
    const r = redis;
    const { child, exited } = startCli(['--engine', engine, '--port', String(r.port), ...LONG]);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    const sentAt = Date.now();
    child.kill(signal);
    const out = await exited;
    expect([out.code, out.signal]).toEqual([code, null]);
    expect(Date.now() - sentAt).toBeLessThan(2_000);
    expect(out.stdout).toMatch(/requests \d+\/50000000/);
    expect(out.stdout).toMatch(/^FAILED \(interrupted\)/m);
    expect(out.stdout + out.stderr).not.toMatch(STACK_TRACE);
  });

  it.each(signals)('%s with --json gives the counters so far, failure kind interrupted, exit %i', async (signal, code) => {
    redis = await startRedis();
    const r = redis;
    const { child, exited } = startCli(['--engine', engine, '--port', String(r.port), ...LONG, '--json']);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    child.kill(signal);
    const out = await exited;
    expect(out.code).toBe(code);
    const result = JSON.parse(out.stdout);
    expect(result.failure.kind).toBe('interrupted');
    expect(result.requests).toBeGreaterThan(0);
    expect(result.complete).toBe(false);
  });

  it.each(signals)('%s to an --embedded run stops its demo server too (no orphan), exit %i', async (signal, code) => {
    const { child, exited } = startCli(['--engine', engine, '--embedded', ...LONG]);
    let serverPid = 0;
    await waitFor('the embedded server to start', () => {
      serverPid = childPids(child.pid!)[0] ?? 0;
      return serverPid > 0;
    });
    expect(liveProcesses('--exit-with-stdin').some((l) => l.trim().startsWith(`${serverPid} `))).toBe(true);
    // Past the start-up, into the load (the signal handlers go in once the server listens, before the run connects).
    await waitFor('the run to connect to its embedded server', () => connected(child.pid!), 30_000);
    child.kill(signal);
    const out = await exited;
    expect(out.code).toBe(code);
    expect(out.stdout).toMatch(/^FAILED \(interrupted\)/m);
    await waitFor('the embedded server to exit', () => !isAlive(serverPid), 5_000);
    expect(liveProcesses('--exit-with-stdin').filter((l) => l.trim().startsWith(`${serverPid} `))).toEqual([]);
  });
});

it('SIGKILL to an --embedded run (no chance to clean up) still leaves no demo server behind', async () => {
  const { child, exited } = startCli(['--engine', 'js', '--embedded', ...LONG]);
  let serverPid = 0;
  await waitFor('the embedded server to start', () => {
    serverPid = childPids(child.pid!)[0] ?? 0;
    return serverPid > 0;
  });
  await waitFor('the run to connect to its embedded server', () => connected(child.pid!), 30_000);
  child.kill('SIGKILL');
  const out = await exited;
  expect(out.signal).toBe('SIGKILL');
  // The server watches its stdin, a pipe from respbench, and ends when it closes.
  await waitFor('the embedded server to exit', () => !isAlive(serverPid), 5_000);
});

/**
 * The way a terminal signals: Ctrl-C (or a closed terminal's SIGHUP) goes to
 * the whole foreground process group — respbench, and under `pnpm bench`
 * pnpm too, which forwards it once more (and turns a second one into
 * SIGTERM). Two Ctrl-C's a few milliseconds apart must still print the
 * partial result and stop the servers respbench started, which are in a
 * group of their own and never see the user's Ctrl-C.
 */
describe('signals to the whole process group, as a terminal sends them', () => {
  /** Groups still there after a test (it failed before they exited): killed, so nothing outlives the test. */
  const groups: Array<() => void> = [];
  afterEach(() => {
    for (const kill of groups.splice(0)) kill();
  });

  /** Starts respbench (through the bin, or `pnpm bench`) as the leader of a new process group. */
  function startGroup(via: 'bin' | 'pnpm', args: string[]) {
    const [cmd, argv] = via === 'bin' ? [process.execPath, [CLI, ...args]] : ['pnpm', ['--silent', 'bench', ...args]];
    const child = spawn(cmd, argv, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const group = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig);
      } catch {
        /* the group is gone */
      }
    };
    const guard = setTimeout(() => group('SIGKILL'), 60_000);
    groups.push(() => {
      clearTimeout(guard);
      if (child.exitCode === null && child.signalCode === null) group('SIGKILL');
    });
    const exited = new Promise<Exited>((resolve) =>
      child.on('close', (code, signal) => {
        clearTimeout(guard);
        resolve({ code, signal, stdout, stderr });
      }),
    );
    /** respbench's own pid: the child itself, or pnpm's script (pnpm `exec`s node in place of its shell). */
    const respbenchPid = () => (via === 'bin' ? child.pid! : (childPids(child.pid!)[0] ?? 0));
    return { child, exited, group, respbenchPid };
  }

  const vias = ['bin', 'pnpm'] as const;
  describe.each(engines())('engine %s', (engine) => {
    it.each(vias)('two SIGINTs 15 ms apart to an --embedded run through %s: the partial result, exit 130, the demo server stopped', async (via) => {
      const run = startGroup(via, ['--engine', engine, '--embedded', ...LONG]);
      let pid = 0;
      await waitFor('the run to start', () => connected((pid = run.respbenchPid())), 30_000);
      const serverPid = childPids(pid)[0];
      expect(serverPid).toBeGreaterThan(0);
      run.group('SIGINT');
      await new Promise((r) => setTimeout(r, 15));
      run.group('SIGINT');
      const out = await run.exited;
      // pnpm turns a second Ctrl-C into SIGTERM for its script; which of the two
      // reaches respbench first depends on scheduling, so through pnpm either
      // status of an interrupted run is right. A second Ctrl-C that comes once
      // respbench has ended can end pnpm itself by that signal (a shell says
      // 130 or 143 for that too). Through the bin it is SIGINT's status.
      if (via === 'bin') expect([out.code, out.signal], out.stderr).toEqual([130, null]);
      else expect([130, 143, 'SIGINT', 'SIGTERM'], `${out.code} ${out.signal}: ${out.stderr}`).toContain(out.code ?? out.signal);
      expect(out.stdout).toMatch(/^FAILED \(interrupted\)/m);
      expect(out.stdout).toMatch(/requests \d+\/50000000/);
      // The demo server never saw the Ctrl-C: the run was stopped by the user, not by a server going away.
      expect(out.stdout + out.stderr).not.toMatch(/closed by server|connection closed/);
      expect(out.stdout + out.stderr).not.toMatch(STACK_TRACE);
      await waitFor('the demo server to stop', () => !isAlive(serverPid), 10_000);
    });
  });

  it.each(engines())('engine %s: signals after the first SIGTERM, until it exits, never kill a plain run: result printed, exit 143 (or 130)', async (engine) => {
    redis = await startRedis();
    const r = redis;
    const run = startGroup('bin', ['--engine', engine, '--port', String(r.port), ...LONG]);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000, 30_000);
    run.group('SIGTERM');
    // A burst (an impatient user, a supervisor repeating itself) over every phase of the shutdown.
    let gone = false;
    void run.exited.then(() => (gone = true));
    for (let i = 0; i < 100 && !gone; i++) {
      await new Promise((res) => setTimeout(res, 3));
      if (!gone) run.group(i % 2 ? 'SIGINT' : 'SIGTERM');
    }
    const out = await run.exited;
    // Never killed. The status is the first signal's: 143, or 130 when the
    // process had no CPU until both were pending (the kernel then delivers
    // the lower-numbered SIGINT first).
    expect(out.signal, out.stderr).toBeNull();
    expect([143, 130]).toContain(out.code);
    expect(out.stdout).toMatch(/^FAILED \(interrupted\)/m);
  });

  it.each(engines())('engine %s: SIGHUP (the terminal closed) is handled like SIGTERM: result, exit 129, demo server stopped', async (engine) => {
    const run = startGroup('bin', ['--engine', engine, '--embedded', ...LONG, '--json']);
    let pid = 0;
    await waitFor('the run to start', () => connected((pid = run.respbenchPid())), 30_000);
    const serverPid = childPids(pid)[0];
    run.group('SIGHUP');
    const out = await run.exited;
    expect([out.code, out.signal], out.stderr).toEqual([129, null]);
    const result = JSON.parse(out.stdout);
    expect(result.failure.kind).toBe('interrupted');
    // The signal may come before the first reply (it is sent once the socket is up): what was sent and answered so far.
    expect(result.interrupted.signal).toBe('SIGHUP');
    expect(result.interrupted.sent).toBeGreaterThanOrEqual(result.requests);
    await waitFor('the demo server to stop', () => !isAlive(serverPid), 10_000);
  });

  it('SIGHUP as soon as the demo server is spawned (before or just after the run starts) exits 129 and leaves no server', async () => {
    const run = startGroup('bin', ['--engine', 'js', '--embedded', ...LONG]);
    let serverPid = 0;
    await waitFor('the demo server to be spawned', () => (serverPid = childPids(run.child.pid!)[0] ?? 0) > 0, 30_000);
    run.group('SIGHUP');
    const out = await run.exited;
    expect([out.code, out.signal], out.stderr).toEqual([129, null]);
    expect(out.stderr).not.toMatch(STACK_TRACE);
    await waitFor('the demo server to stop', () => !isAlive(serverPid), 10_000);
  });
});

describe('stdout on a full device', () => {
  it('is one line on stderr and exit 1, not a stack trace', async () => {
    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [CLI, '--engine', 'js', '--embedded', '--requests', '2000'], { stdio: ['ignore', full, 'pipe'], encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).not.toMatch(STACK_TRACE);
      expect(r.stderr.trim().split('\n')).toEqual(['respbench: cannot write the output to stdout: no space left on device (ENOSPC)']);
    } finally {
      closeSync(full);
    }
  });
});
