/**
 * The run says what it will do before it does it, and afterwards says
 * plainly what happened: the header on stdout before the first reply, a
 * server that closed the connection at once, a run of nothing but error
 * replies, an interrupt with what it left unanswered, and --json figures that
 * say what ran (threads, whole numbers, null when nothing was measured);
 * the pipeline mode in the header; the progress line on a terminal.
 */
import { spawn, spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from './faults/fault-server.mjs';
import { waitFor } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { CLI, commandsProcessed, freePort, type RedisServer, runCli, runJson, startRedis } from './helpers/servers.js';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function redis(): Promise<RedisServer> {
  const r = await startRedis();
  cleanups.push(() => r.stop());
  return r;
}

async function faultServer(mode: string, after = 0): Promise<FaultServer> {
  const s = await startFaultServer({ mode, after });
  cleanups.push(() => s.close());
  return s;
}

describe.each(engines())('engine %s', (engine) => {
  it('prints the header (engine, target, workload, seed) before the run, and the figures after', async () => {
    const r = await redis();
    const child = spawn(process.execPath, [CLI, '--engine', engine, '-p', String(r.port), '--mode', 'set', '--duration', '30s', '--seed', '7'], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await waitFor('the header', () => stdout.includes('workload:'));
    // The run is still going: only the header is out.
    const head = `respbench · engine ${engine} · target 127.0.0.1:${r.port}\nworkload: mode set, for 30 s, 1 connection, pipeline 64 (window), keyspace 100000, value 32 B, commands SET, prefix bench:key:, seed 7, verify off\n`;
    expect(stdout.slice(0, head.length)).toBe(head);
    // The native engine's header names its I/O backend (--io) on one more line.
    expect(stdout.slice(head.length)).toMatch(engine === 'native' ? /^io: (io_uring|epoll)( \(.+\))?\n$/ : /^$/);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    child.kill('SIGINT');
    expect(await exited, stdout).toBe(130);
    expect(stdout).toMatch(/ops\/s +avg us\/op/);
    expect(stdout).toMatch(/^interrupted by SIGINT: \d+ requests sent, \d+ of them left unanswered \(in no figure\)$/m);
  });

  it('the header says the pipeline mode; -t defaults to batch (redis-benchmark\'s -P), a plain run to window', async () => {
    const r = await redis();
    const plain = await runCli(['--engine', engine, '--port', String(r.port), '--mode', 'set', '-c', '1', '-P', '8', '-n', '160'], 30_000);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('pipeline 8 (window)');
    const suite = await runCli(['--engine', engine, '--port', String(r.port), '-t', 'set', '-n', '80', '-c', '1', '-P', '4'], 30_000);
    expect(suite.code, suite.stderr).toBe(0);
    expect(suite.stdout).toContain('pipeline 4 (batch: send N, wait for all N, as redis-benchmark)');
    const asked = await runCli(['--engine', engine, '--port', String(r.port), '-t', 'set', '-n', '80', '-c', '1', '-P', '4', '--pipeline-mode', 'window'], 30_000);
    expect(asked.stdout).toContain('pipeline 4 (window: a request goes out as each reply comes)');
    const bad = await runCli(['--engine', engine, '--port', String(r.port), '--pipeline-mode', 'sliding'], 10_000);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toMatch(/^respbench: --pipeline-mode .*window.*batch/);
  });

  it('an interrupted --json run records the signal, the requests sent and those left unanswered', async () => {
    const r = await redis();
    const child = spawn(process.execPath, [CLI, '--engine', engine, '-p', String(r.port), '--mode', 'set', '--duration', '30s', '--json', '-P', '32'], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // With --json the header goes to stderr, stdout stays one JSON document.
    await waitFor('the header on stderr', () => stderr.includes('workload:'));
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    const result = JSON.parse(stdout);
    expect(result.failure.kind).toBe('interrupted');
    expect(result.interrupted.signal).toBe('SIGTERM');
    expect(result.interrupted.unanswered).toBeGreaterThanOrEqual(0);
    expect(result.interrupted.unanswered).toBeLessThanOrEqual(32);
    expect(result.interrupted.sent).toBe(result.requests + result.interrupted.unanswered);
    expect(Number.isInteger(result.elapsedNs)).toBe(true);
  });

  it('-t --json: the interrupted test records the signal too', async () => {
    const r = await redis();
    const child = spawn(process.execPath, [CLI, '--engine', engine, '-p', String(r.port), '-t', 'set', '-n', '50000000', '-c', '2', '--json'], { stdio: ['ignore', 'pipe', 'ignore'] });
    cleanups.push(() => child.kill('SIGKILL'));
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const [set] = JSON.parse(stdout);
    expect(set.result.failure.kind).toBe('interrupted');
    expect(set.result.interrupted).toMatchObject({ signal: 'SIGINT' });
    expect(set.result.interrupted.sent).toBe(set.result.requests + set.result.interrupted.unanswered);
  });

  it('a server that closes the connection before any reply: may have crashed, and how to check', async () => {
    const s = await faultServer('close-after', 0);
    const run = await runCli(['--engine', engine, '-p', String(s.port), '-n', '100']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(`hint: the server closed the connection before any reply: it may have crashed or refused the command; check that it still runs (redis-cli -h 127.0.0.1 -p ${s.port} PING) and look at its log`);
    // Said once: the reason on stderr, the hint with the figures.
    expect(`${run.stdout}\n${run.stderr}`.match(/may have crashed/g)).toHaveLength(1);
  });

  it('a run whose replies were all errors prints no rate, only the count and the first error', async () => {
    const r = await redis();
    const run = await runCli(['--engine', engine, '-p', String(r.port), '-n', '500', 'NOSUCHCMD', 'x']);
    expect(run.code).toBe(3);
    expect(run.stdout).toContain('no rate: all 500 replies were errors');
    expect(run.stdout).toMatch(/ERROR REPLIES: 500, first: ERR unknown command 'NOSUCHCMD'/);
    expect(run.stdout).not.toMatch(/ops\/s/);
    // The demo server is kvstore-shaped: it knows no INCR.
    const suite = await runCli(['--engine', engine, '--embedded', '-n', '300', '-t', 'set,incr']);
    expect(suite.code).toBe(3);
    expect(suite.stdout).toMatch(/^SET: \d+\.\d\d requests per second/m);
    expect(suite.stdout).toMatch(/^INCR: all 300 replies were errors, first: ERR unknown command 'incr'/im);
  });

  it('--json: a run that did not start has null figures; plan.threads says what ran', async () => {
    const port = await freePort();
    const { run, result } = await runJson(['--engine', engine, '-p', String(port), '-n', '100']);
    expect(run.code).toBe(1);
    expect(result).toMatchObject({ opsPerSec: null, avgUsPerOp: null, elapsedSec: null, latencyUs: null, requests: 0 });
    const r = await redis();
    const ran = await runJson(['--engine', engine, '-p', String(r.port), '-n', '2000', '--mode', 'set', '--threads', '2', '-c', '4']);
    expect(ran.run.code).toBe(0);
    expect(ran.result.plan.threads).toBe(engine === 'js' ? 1 : 2);
    expect(Number.isInteger(ran.result.elapsedNs)).toBe(true);
  });
});

describe('while it runs', () => {
  it('shows ops/s and done % on a terminal, and nothing with --quiet or when not a terminal', async () => {
    // The line shows from 1 s on, redrawn every 250 ms: a 2 s run shows it three times or more (a 1 s run
    // showed it only when a tick came between 1 s and the end, which an interval cut held back by ~10 ms
    // used to make likely; the --quiet and piped runs need the same length to mean anything).
    // At a rate: the line is the same as flat out's, and the three runs leave the machine to the files beside this one.
    const r = await redis();
    const args = ['--engine', 'js', '--port', String(r.port), '--duration', '2s', '--mode', 'set', '--rate', '2000'];
    const tty = spawnSync('script', ['-qefc', [process.execPath, CLI, ...args].join(' '), '/dev/null'], { encoding: 'utf8', timeout: 20_000 });
    // Done %, the rate now, p99 so far, errors and the time left.
    expect(tty.stdout).toMatch(/running: \d+\.\d% · \d+ ops\/s · p99 \d+\.\d (us|ms) · errors 0 · \d+(\.\d)?s left/);
    const quiet = spawnSync('script', ['-qefc', [process.execPath, CLI, ...args, '--quiet'].join(' '), '/dev/null'], { encoding: 'utf8', timeout: 20_000 });
    expect(quiet.stdout).not.toMatch(/running:/);
    const piped = await runCli(args);
    expect(piped.stderr).not.toMatch(/running:/);
  });
});
