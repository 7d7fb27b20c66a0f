/**
 * The faults a real redis-server can produce on request: nobody listening, a
 * host that does not resolve, the server killed mid-run, the server paused,
 * out-of-memory error replies, very large values. Every case runs over each
 * engine that loads.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { STACK_TRACE, waitFor } from './faults/harness.js';
import { engines } from './helpers/engines.js';
import { commandsProcessed, freePort, redisPerTest, type RedisServer, runCli, runJson } from './helpers/servers.js';

let redis: RedisServer | null = null;
/** Each test's redis-server is stopped after it, and must leave no process behind. */
const startRedis = redisPerTest();

/** A run long enough to be interrupted by whatever the test does to the server. */
function longRun(engine: string, port: number, more: string[] = []): string[] {
  return ['--engine', engine, '--port', String(port), '--mode', 'set', '--requests', '20000000', '--pipeline', '16', '-q', ...more];
}

describe.each(engines())('engine %s against redis-server', (engine) => {
  it('connection refused: exit 1 within seconds, saying so', async () => {
    const port = await freePort();
    const run = await runCli(['--engine', engine, '--port', String(port), '--requests', '10'], 20_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`connection refused by 127\\.0\\.0\\.1:${port}`));
    expect(run.stderr).not.toMatch(STACK_TRACE);
    expect(run.ms).toBeLessThan(5_000);
  });

  it('a host that does not resolve: exit 1, naming the host', async () => {
    const run = await runCli(['--engine', engine, '--host', 'no-such-host.invalid', '--requests', '10', '--timeout', '5s'], 30_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot resolve host "no-such-host\.invalid"|no-such-host\.invalid.*timed out/);
    expect(run.stderr).not.toMatch(STACK_TRACE);
  });

  it('the server killed (kill -9) mid-run: the run ends at once with the counters so far, exit 1', async () => {
    redis = await startRedis();
    const r = redis;
    const pending = runJson(longRun(engine, r.port), 60_000);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    const killedAt = Date.now();
    r.process.kill('SIGKILL');
    const { run, result } = await pending;
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('closed');
    expect(result.failure.message).toMatch(/^connection 0\b.*connection closed by server after \d+ replies/);
    const replies = Number(/after (\d+) replies/.exec(result.failure.message)![1]);
    expect(result.requests).toBe(replies);
    expect(result.requests).toBeGreaterThan(1_000);
    expect(result.requests).toBeLessThan(20_000_000);
    expect(result.complete).toBe(false);
    expect(Date.now() - killedAt).toBeLessThan(2_000);
  });

  it('a paused server (CLIENT PAUSE) ends the run at --timeout 500ms with the counters so far', async () => {
    redis = await startRedis();
    const r = redis;
    const pending = runJson(longRun(engine, r.port, ['--timeout', '500ms', '-c', '2']), 60_000);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    const pausedAt = Date.now();
    r.cli('CLIENT', 'PAUSE', '4000', 'ALL');
    const { run, result } = await pending;
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('timeout');
    expect(result.failure.message).toMatch(/^connection \d\b.*no reply within 500 ms \(--timeout\) after \d+ replies/);
    expect(result.requests).toBeGreaterThan(1_000);
    // Ended by the timeout, not by the pause running out after 4 s.
    expect(Date.now() - pausedAt).toBeLessThan(2_500);
  });

  it('a server stuck in DEBUG SLEEP ends the run at --timeout 500ms, not when it wakes', async () => {
    redis = await startRedis(['--enable-debug-command', 'yes']);
    const r = redis;
    const pending = runJson(longRun(engine, r.port, ['--timeout', '500ms']), 60_000);
    await waitFor('the run to get going', () => commandsProcessed(r) > 2_000);
    const sleptAt = Date.now();
    // Blocks the whole server for 4 s; redis-cli waits for it, so not spawnSync.
    const sleeper = spawn('redis-cli', ['-p', String(r.port), 'DEBUG', 'SLEEP', '4'], { stdio: 'ignore' });
    const { run, result } = await pending;
    sleeper.kill('SIGKILL');
    expect(run.code).toBe(1);
    expect(result.failure.kind).toBe('timeout');
    expect(result.failure.message).toMatch(/no reply within 500 ms \(--timeout\) after \d+ replies/);
    expect(result.requests).toBeGreaterThan(1_000);
    expect(Date.now() - sleptAt).toBeLessThan(2_500);
  });

  it('error replies (-OOM under maxmemory) are counted, the first shown with a hint, the run goes on: exit 3', async () => {
    redis = await startRedis(['--maxmemory', '1mb', '--maxmemory-policy', 'noeviction']);
    const args = ['--engine', engine, '--port', String(redis.port), '--mode', 'set', '--requests', '3000', '--value-size', '1000', '--keyspace', '3000', '-q'];
    const { run, result } = await runJson(args, 30_000);
    expect(run.code).toBe(3);
    expect(result.failure).toBeNull();
    expect(result.requests).toBe(3000);
    expect(result.errors).toBeGreaterThan(0);
    expect(result.errors + result.ok).toBe(3000);
    expect(result.firstError).toMatch(/^OOM /);
    const human = await runCli(args, 30_000);
    expect(human.code).toBe(3);
    expect(human.stdout).toMatch(/ERROR REPLIES: \d+, first: OOM /);
    expect(human.stdout).toMatch(/hint: the server is out of memory/);
  });

  it('1 MiB values are written and read back verified', async () => {
    redis = await startRedis();
    const { run, result } = await runJson(
      ['--engine', engine, '--port', String(redis.port), '--mode', 'get', '--verify-get', '--keyspace', '8', '--requests', '24', '--value-size', String(1 << 20), '--pipeline', '4', '-q'],
      60_000,
    );
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(result.requests).toBe(24);
    expect(result.mismatches).toBe(0);
    expect(result.misses).toBe(0);
    expect(result.bytesIn).toBeGreaterThan(24 * (1 << 20));
  });

  it('16 MiB values are written and read back verified', async () => {
    redis = await startRedis();
    const { run, result } = await runJson(
      ['--engine', engine, '--port', String(redis.port), '--mode', 'get', '--verify-get', '--keyspace', '2', '--requests', '4', '--value-size', String(16 << 20), '--pipeline', '2', '-q'],
      60_000,
    );
    expect([run.code, run.stderr]).toEqual([0, '']);
    expect(result.requests).toBe(4);
    expect(result.mismatches).toBe(0);
    expect(result.misses).toBe(0);
    expect(result.preloadRequests).toBe(2);
  });
});

it('an absurd value size is a usage error, before any connection is tried', async () => {
  const port = await freePort();
  const run = await runCli(['--port', String(port), '--value-size', '999999999999'], 20_000);
  expect(run.code).toBe(2);
  expect(run.stderr).toMatch(/^respbench: --value-size must be/);
});
