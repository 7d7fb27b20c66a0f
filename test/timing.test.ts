/**
 * Time-bounded runs, warmup and open-loop rate against a real redis-server:
 * figures that time the machine, so the file runs alone (the live progress
 * line: run-says.test.ts).
 */
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines, ioEngines } from './helpers/engines.js';
import { CLI, cliArgs, commandsProcessed, runCli, runJson, useRedis } from './helpers/servers.js';

const redis = useRedis();

/** Answers +OK to each command (one `*` per command) `delayMs` after it arrives. */
function slowServer(delayMs: number): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (chunk) => {
      let n = 0;
      for (const b of chunk) if (b === 0x2a) n++;
      if (n > 0) setTimeout(() => socket.writable && socket.write('+OK\r\n'.repeat(n)), delayMs);
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        close: () => {
          for (const s of sockets) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

describe.each(ioEngines())('engine %s', (engine) => {
  const base = () => ['--engine', engine, '--port', String(redis.current.port)];

  it('--duration 2s ends in about 2 s (the default --requests count bounds nothing)', async () => {
    const { run, result } = await runJson([...base(), '--duration', '2s', '--mode', 'set'], 20_000);
    expect(run.code).toBe(0);
    expect(result.elapsedSec).toBeGreaterThan(1.95);
    expect(result.elapsedSec).toBeLessThan(2.5);
    expect(result.requests).toBeGreaterThan(0);
    expect(result.complete).toBe(true);
  });

  it('--warmup sends load first and leaves it out of every figure, saying so', async () => {
    const { run, result } = await runJson([...base(), '--warmup', '500ms', '--requests', '20000', '--mode', 'set']);
    expect(run.code).toBe(0);
    expect(result.requests).toBe(20000);
    expect(result.sets).toBe(20000);
    expect(result.warmupRequests).toBeGreaterThan(0);
    const counted = result.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
    expect(counted).toBe(20000);
    const human = await runCli([...base(), '--warmup', '300ms', '--requests', '5000']);
    expect(human.stdout).toMatch(/warmup: \d+ requests in 0\.\d+ s \(sent and answered, not in the figures\)/);
  });

  it('--rate holds the asked rate within a few percent', async () => {
    const { run, result } = await runJson([...base(), '--rate', '5000', '--duration', '2s', '--mode', 'set'], 20_000);
    expect(run.code).toBe(0);
    expect(result.opsPerSec).toBeGreaterThan(5000 * 0.97);
    expect(result.opsPerSec).toBeLessThan(5000 * 1.03);
    expect(result.rateKept).toBe(true);
    expect(result.serviceUs).not.toBeNull();
  });

  it('--rate spreads the connections over the interval instead of firing them together', async () => {
    // 20 connections at 10/s: each sends every 2 s, one connection every 0.1 s.
    const { run, result } = await runJson([...base(), '--rate', '10', '-c', '20', '--duration', '3s', '--mode', 'set'], 20_000);
    expect(run.code).toBe(0);
    expect(result.requests).toBeGreaterThanOrEqual(28);
    expect(result.requests).toBeLessThanOrEqual(32);
  });

  it('--rate sends on time at low rates: on an idle server intended-time and service latency agree', async () => {
    const { result } = await runJson([...base(), '--rate', '400', '-c', '2', '--duration', '1500ms', '--mode', 'set'], 20_000);
    expect(result.requests).toBeGreaterThan(550);
    // Sending late would add up to a timer tick (1 ms) to every intended-time latency.
    // Measured here: up to 385 us in a quiet CI run (the issue's ~100 us goal is
    // not met by the JS engine); a timer tick late would be 1000 us and more.
    expect(result.latencyUs.p50 - result.serviceUs.p50).toBeLessThan(600);
  });

  it("--rate reports the client's own lag beside the latency: how late each request went out, and for JS the event-loop delay", async () => {
    const { run, result } = await runJson([...base(), '--rate', '2000', '-c', '2', '--duration', '1s', '--mode', 'set'], 20_000);
    expect(run.code).toBe(0);
    // One lag per timed request, none negative, none above that request's latency from its intended send.
    const lagged = result.scheduleLagHistogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
    expect(lagged).toBe(result.requests);
    const lag = result.clientLag.scheduleLagUs;
    expect(lag.p50).toBeGreaterThanOrEqual(0);
    expect(lag.p50).toBeLessThanOrEqual(lag.p99);
    expect(lag.p99).toBeLessThanOrEqual(lag.max);
    expect(lag.max).toBeLessThanOrEqual(result.latencyUs.max);
    expect(lag.max).toBeLessThan(result.elapsedSec * 1e6);
    expect(result.clientLag.p99).toBeGreaterThanOrEqual(lag.p99);
    expect(typeof result.clientLag.distortsLatency).toBe('boolean');
    if (engine === 'js') {
      // A 1 ms timer over about a second: hundreds of runs of it, each late by less than the run.
      expect(result.eventLoopDelay.samples).toBeGreaterThan(100);
      const d = result.clientLag.eventLoopDelayUs;
      expect(d.p50).toBeGreaterThanOrEqual(0);
      expect(d.p50).toBeLessThanOrEqual(d.max);
      expect(d.max).toBeLessThan(result.elapsedSec * 1e6);
    } else {
      expect(result.eventLoopDelay).toBeNull();
      expect(result.clientLag.eventLoopDelayUs).toBeNull();
    }
    const human = await runCli([...base(), '--rate', '1000', '--duration', '300ms', '--mode', 'set']);
    expect(human.stdout).toMatch(/^client lag: sent late by p50 \d+\.\d · p99 \d+\.\d · max \d+\.\d us \(actual - intended send\)/m);
    const closed = await runJson([...base(), '--requests', '2000', '--mode', 'set']);
    expect(closed.result.scheduleLagHistogram).toBeNull();
    expect(closed.result.clientLag.scheduleLagUs).toBeNull();
    if (engine === 'js') {
      // A closed loop's timer runs every 10 ms, not every 1 ms (engine-js/run.ts): at most one run of it per 10 ms of
      // the run (and of the close that follows it), where a 1 ms timer would have run about 300 times here.
      const timed = await runJson([...base(), '--duration', '300ms', '--mode', 'set']);
      expect(timed.result.eventLoopDelay.samples).toBeGreaterThan(0);
      expect(timed.result.eventLoopDelay.samples).toBeLessThanOrEqual(Math.ceil(timed.result.elapsedSec * 100) + 2);
    }
  });

  it('a schedule that cannot be kept (a rate far above what a slow server answers) says the percentiles include the wait to send', async () => {
    const slow = await slowServer(20);
    try {
      // One request in flight, each answered after 20 ms: 50/s at best, 2000/s asked.
      const args = ['--engine', engine, '--port', String(slow.port), '--rate', '2000', '--duration', '1s', '-P', '1', '--mode', 'set', '--timeout', '5s'];
      const { run, result } = await runJson(args, 20_000);
      expect(run.code).toBe(0);
      expect(result.rateKept).toBe(false);
      expect(result.clientLag.distortsLatency).toBe(true);
      expect(result.clientLag.scheduleLagUs.p99).toBeGreaterThan(0.1 * result.latencyUs.p99);
      const human = await runCli(args, 20_000);
      expect(human.stdout).toMatch(/^note: the client's own lag \(p99 \d+\.\d us\) is more than 10% of the latency p99 \(\d+\.\d us\): the percentiles include the client's pauses, not only the server's; requests went out late/m);
    } finally {
      slow.close();
    }
  });

  it('a server stall shows in the intended-time percentiles, not in the service time', async () => {
    const before = commandsProcessed(redis.current);
    const child = spawn(process.execPath, [CLI, ...cliArgs([...base(), '--rate', '4000', '--requests', '12000', '--pipeline', '16', '--mode', 'set', '--json'])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    // Half a second of the 3 s schedule sent (2000 requests), not a guessed start-up time: the stall falls mid-run.
    while (commandsProcessed(redis.current) < before + 2000 && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    // Blocks the server for 500 ms while the schedule keeps running.
    spawnSync('redis-cli', ['-p', String(redis.current.port), 'DEBUG', 'SLEEP', '0.5']);
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result.requests).toBe(12000);
    expect(result.latencyUs.p99).toBeGreaterThan(300_000);
    expect(result.serviceUs.p99).toBeLessThan(50_000);
  });
});
