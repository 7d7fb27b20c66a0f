/**
 * Results people keep (issue 14): latency per command, in both engines,
 * against a real redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { runCli, runJson, startRedis, type RedisServer } from './helpers/servers.js';

type Buckets = { buckets: [number, number][] };
const countOf = (h: Buckets) => h.buckets.reduce((n, [, c]) => n + c, 0);

describe.each(engines())('engine %s', (engineName) => {
  const engine = ['--engine', engineName];
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('per-command rows (SET, GET, Totals) add up to the totals, in JSON and the human table', async () => {
    redis.cli('FLUSHALL');
    const args = [...engine, '--port', String(redis.port), '--mode', 'mixed', '--requests', '20000', '-c', '4', '--pipeline', '16', '--keyspace', '1000', '--seed', '5'];
    const { run, result } = await runJson(args);
    expect(run.code).toBe(0);
    expect(result.perCommand.map((r: { command: string }) => r.command)).toEqual(['SET', 'GET', 'Totals']);
    const [set, get, totals] = result.perCommand;
    expect(set.requests).toBe(result.sets);
    expect(get.requests).toBe(result.gets);
    expect(set.requests + get.requests).toBe(totals.requests);
    expect(totals.requests).toBe(20000);
    expect(set.opsPerSec + get.opsPerSec).toBeCloseTo(totals.opsPerSec, 6);
    expect(totals.latencyUs).toEqual(result.latencyUs);
    // The histograms themselves: bucket for bucket, SET + GET = the total.
    expect(countOf(result.setHistogram)).toBe(result.sets);
    expect(countOf(result.getHistogram)).toBe(result.gets);
    const sum = new Map<number, number>();
    for (const h of [result.setHistogram, result.getHistogram]) for (const [v, c] of h.buckets as [number, number][]) sum.set(v, (sum.get(v) ?? 0) + c);
    expect([...sum.entries()].sort((a, b) => a[0] - b[0])).toEqual(result.histogram.buckets);
    const human = await runCli(args);
    expect(human.code).toBe(0);
    const rows = human.stdout.split('\n').filter((l) => /^(SET|GET|Totals)\s/.test(l));
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(['SET', 'GET', 'Totals']);
    const requests = rows.map((l) => Number(l.split(/\s+/)[1]));
    expect(requests[0] + requests[1]).toBe(requests[2]);
  });

  it('a command on the line names its row', async () => {
    redis.cli('FLUSHALL');
    // The command comes last on the line: every flag before it.
    const run = await runCli([...engine, '--port', String(redis.port), '-n', '2000', '-c', '2', '--json', 'LPUSH', 'mylist', 'x']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.perCommand.map((r: { command: string }) => r.command)).toEqual(['LPUSH', 'Totals']);
    expect(result.perCommand[0].requests).toBe(2000);
  });
});
