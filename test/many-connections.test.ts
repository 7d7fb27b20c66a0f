/**
 * Many connections: -c 1000 against Redis works and the counters add up; an
 * open-file limit too low for -c says so in one line instead of failing
 * obscurely.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { CLI, runJson, useRedis } from './helpers/servers.js';

const redis = useRedis();

describe.each(engines())('engine %s', (engine) => {
  it('-c 1000 shares the requests over a thousand connections and the counters add up', async () => {
    redis.current.cli('FLUSHALL');
    const { run, result } = await runJson(['--engine', engine, '--port', String(redis.current.port), '-c', '1000', '--requests', '100000', '--pipeline', '8', '--mode', 'mixed', '--keyspace', '50000', '--seed', '11']);
    expect(run.code).toBe(0);
    expect(result.requests).toBe(100000);
    expect(result.sets + result.gets).toBe(100000);
    expect(result.ok).toBe(100000);
    expect(result.errors).toBe(0);
    const counted = result.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
    expect(counted).toBe(100000);
    // Every connection wrote: a thousand streams over 50,000 keys leave many keys.
    expect(Number(redis.current.cli('DBSIZE'))).toBeGreaterThan(30000);
  });

  it('an open-file limit too low for -c is named, with exit 1', () => {
    const r = spawnSync('bash', ['-c', `ulimit -n 128 && exec "${process.execPath}" "${CLI}" --engine ${engine} --port ${redis.current.port} -c 1000 --requests 10000 -q`], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/open-file limit/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
