/**
 * --ramp-connections start:step:every (issue 15, memtier's staircase): a
 * duration run opens `start` connections, then `step` more every `every`, up
 * to -c; the series shows the connections per interval. Both engines.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { runJson, startRedis, type RedisServer } from './helpers/servers.js';

describe.each(engines())('engine %s', (engineName) => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('1:2:400ms up to -c 7 grows the connections 1, 3, 5, 7 in the series, and the intervals add up to the run', async () => {
    const { run, result } = await runJson(['--engine', engineName, '--port', String(redis.port), '--duration', '1.6s', '--interval', '200ms', '-c', '7', '-P', '4', '--keyspace', '1000', '--ramp-connections', '1:2:400ms']);
    expect(run.code).toBe(0);
    expect(result.plan.rampConnections).toEqual({ start: 1, step: 2, everyMs: 400 });
    const series = result.series as { connections: number; requests: number; startSec: number }[];
    const counts = series.map((e) => e.connections);
    // The staircase, never down, from the start to -c. A count is what was open at the interval's end: a step's
    // connections open one by one (each connects and makes ready), so a boundary may fall inside a step (e.g. 4).
    expect(counts[0]).toBe(1);
    expect(counts[counts.length - 1]).toBe(7);
    for (const n of counts) expect(n >= 1 && n <= 7).toBe(true);
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]);
    // Not all at once: a busy machine may open a step late, but no sooner than asked.
    expect(new Set(counts).size).toBeGreaterThanOrEqual(3);
    series.forEach((e, i) => {
      const end = (i + 1) * 0.2;
      const due = 1 + 2 * Math.floor(end / 0.4 + 1e-9);
      expect(e.connections).toBeLessThanOrEqual(Math.min(7, due));
    });
    expect(series.reduce((n, e) => n + e.requests, 0)).toBe(result.requests);
    expect(result.sets + result.gets).toBe(result.requests);
    expect(result.errors).toBe(0);
  });

  it('steps due after the end open nothing, and the run does not wait for them', async () => {
    const { run, result } = await runJson(['--engine', engineName, '--port', String(redis.port), '--duration', '1s', '--interval', '500ms', '-c', '7', '-P', '4', '--keyspace', '1000', '--ramp-connections', '1:2:3s']);
    expect(run.code).toBe(0);
    expect(result.series.map((e: { connections: number }) => e.connections)).toEqual(result.series.map(() => 1));
    expect(result.elapsedSec).toBeLessThan(1.5);
    // The first step would be due at 3 s, the last at 9 s.
    expect(run.ms).toBeLessThan(2800);
  });
});
