/**
 * Ctrl-C and `kill`: a running respbench prints what it measured so far,
 * marked as interrupted, and exits 130 (SIGINT) or 143 (SIGTERM); nothing it
 * started (the embedded demo server) outlives it.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { availableEngines, childPids, isAlive, STACK_TRACE, waitFor } from './faults/harness.js';
import { CLI, liveProcesses, redisPerTest, type RedisServer } from './helpers/servers.js';

const engines = await availableEngines();

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
function startCli(args: string[]) {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const exited = new Promise<Exited>((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ code, signal, stdout, stderr });
    }),
  );
  return { child, exited };
}

/** A run far longer than any test waits for. */
const LONG = ['--mode', 'set', '--requests', '50000000', '--pipeline', '16', '--timeout', '5s'];

function commandsProcessed(r: RedisServer): number {
  return Number(/total_commands_processed:(\d+)/.exec(r.cli('INFO', 'stats'))?.[1] ?? 0);
}

const signals: Array<[NodeJS.Signals, number]> = [
  ['SIGINT', 130],
  ['SIGTERM', 143],
];

describe.each(engines)('engine %s', (engine) => {
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
    // Past the start-up, into the load (the signal handlers go in once the server listens).
    await new Promise((resolve) => setTimeout(resolve, 700));
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
  await new Promise((resolve) => setTimeout(resolve, 500));
  child.kill('SIGKILL');
  const out = await exited;
  expect(out.signal).toBe('SIGKILL');
  // The server watches its stdin, a pipe from respbench, and ends when it closes.
  await waitFor('the embedded server to exit', () => !isAlive(serverPid), 5_000);
});
