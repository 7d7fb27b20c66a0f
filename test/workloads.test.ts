/**
 * Workloads users bring from redis-benchmark and memtier: templates, the
 * command suite, key patterns, value size ranges — against a real redis-server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines, ioEngines } from './helpers/engines.js';
import { spawn } from 'node:child_process';
import { CLI, freePort, runCli, runJson, startRedis, useRedis, waitForPort } from './helpers/servers.js';

/** The demo server (kvstore-shaped: no INCR) on a free port. */
async function runCliServe(): Promise<{ port: number; stop: () => void }> {
  const port = await freePort();
  const child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { stdio: 'ignore' });
  await waitForPort(port);
  return { port, stop: () => child.kill('SIGKILL') };
}

const redis = useRedis();

describe.each(engines())('engine %s', (engine) => {
  const base = () => ['--engine', engine, '--port', String(redis.current.port)];

  it('HSET/HGET templates write hashes and verify against real Redis', async () => {
    redis.current.cli('FLUSHALL');
    const tmpl = ['--set-cmd', 'HSET __key__ field __data__', '--get-cmd', 'HGET __key__ field', '--keyspace', '500', '--key-prefix', 'bench:h:'];
    const { run, result } = await runJson([...base(), ...tmpl, '--mode', 'get', '--verify-get', '--requests', '20000']);
    expect(run.code).toBe(0);
    expect(result.mismatches).toBe(0);
    expect(result.misses).toBe(0);
    expect(redis.current.cli('TYPE', 'bench:h:7')).toBe('hash');
    expect(redis.current.cli('HGET', 'bench:h:7', 'field')).toHaveLength(32);
  });

  it("the suite prints a header, then one redis-benchmark line per test in redis-benchmark's order, and fills the list before LRANGE", async () => {
    redis.current.cli('FLUSHALL');
    const run = await runCli([...base(), '-t', 'set,get,incr,lpush,lpop,sadd,hset,zadd,lrange_100,mset,ping', '-n', '5000', '-P', '16', '--key-prefix', 'suite:']);
    expect(run.code).toBe(0);
    const [head, workload, additions, ...lines] = run.stdout.trim().split('\n');
    expect(head).toMatch(/^respbench -t · engine \w+ · target 127\.0\.0\.1:\d+ · seed \d+$/);
    expect(workload).toMatch(/5000 requests per test, 50 connections, pipeline 16 \(batch: send N, wait for all N, as redis-benchmark\), value 3 B, keys: one per test.*key prefix suite: \(an addition\)$/);
    expect(additions).toMatch(/^additions to redis-benchmark: /);
    const labels = lines.map((l) => l.split(':')[0]);
    expect(labels).toEqual(['PING_INLINE', 'PING_MBULK', 'SET', 'GET', 'INCR', 'LPUSH', 'LPOP', 'SADD', 'HSET', 'ZADD', 'LPUSH (needed to benchmark LRANGE)', 'LRANGE_100 (first 100 elements)', 'MSET (10 keys)']);
    for (const line of lines) expect(line).toMatch(/: \d+\.\d\d requests per second, p50=\d+\.\d{3} msec$/);
    // The fill left 5000 elements; LRANGE does not pop.
    expect(Number(redis.current.cli('LLEN', 'suite:mylist'))).toBe(5000);
    expect(Number(redis.current.cli('ZCARD', 'suite:myzset'))).toBeGreaterThan(0);
  });

  it('--csv prints redis-benchmark CSV columns', async () => {
    const run = await runCli([...base(), '-t', 'set,get', '-n', '3000', '--csv']);
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toBe('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms","errors"');
    expect(lines.slice(1).map((l) => l.split(',')[0])).toEqual(['"SET"', '"GET"']);
  });

  it('--compare runs the suite on two targets and prints the ratio', async () => {
    const other = await startRedis();
    try {
      const run = await runCli([...base(), '-t', 'set,ping', '-n', '3000', '--compare', `127.0.0.1:${other.port}`]);
      expect(run.code).toBe(0);
      // The ratio is the first target as a percentage of the second, headed with both names.
      expect(run.stdout).toContain(`127.0.0.1:${redis.current.port} vs 127.0.0.1:${other.port}: 127.0.0.1:${redis.current.port}'s ops/s as a percentage of 127.0.0.1:${other.port}'s`);
      const row = /\| SET\s+\| (\d+\.\d\d)\s+\| (\d+\.\d\d)\s+\| (\d+\.\d)%/.exec(run.stdout);
      expect(row).not.toBeNull();
      expect(Number(row![3])).toBeCloseTo((100 * Number(row![1])) / Number(row![2]), 0);
      expect(Number(other.cli('DBSIZE'))).toBeGreaterThan(0);
    } finally {
      await other.stop();
    }
  });

  it('zipf over a large keyspace touches far fewer distinct keys than uniform', async () => {
    const distinct = async (pattern: string) => {
      redis.current.cli('FLUSHALL');
      const { run } = await runJson([...base(), '--mode', 'set', '--requests', '20000', '--keyspace', '1000000', '--key-pattern', pattern, '--zipf-exponent', '1.1', '--seed', '5']);
      expect(run.code).toBe(0);
      return Number(redis.current.cli('DBSIZE'));
    };
    const uniform = await distinct('uniform');
    const zipf = await distinct('zipf');
    expect(uniform).toBeGreaterThan(19000);
    expect(zipf).toBeLessThan(uniform * 0.5);
    // Index 0 is the hottest key: 20,000 zipf draws cannot miss it.
    expect(redis.current.cli('EXISTS', 'bench:key:0')).toBe('1');
    redis.current.cli('FLUSHALL');
  });

  it('sequential walks consecutive keys; gaussian clusters round the middle', async () => {
    redis.current.cli('FLUSHALL');
    await runJson([...base(), '--mode', 'set', '--requests', '1000', '--keyspace', '1000000', '--key-pattern', 'sequential', '--key-prefix', 'seq:']);
    expect(Number(redis.current.cli('DBSIZE'))).toBe(1000);
    expect(redis.current.cli('EXISTS', 'seq:0', 'seq:999')).toBe('2');
    redis.current.cli('FLUSHALL');
    await runJson([...base(), '--mode', 'set', '--requests', '2000', '--keyspace', '1000000', '--key-pattern', 'gaussian', '--key-stddev', '100', '--key-prefix', 'g:']);
    const keys = redis.current.cli('KEYS', 'g:*').split('\n').map((k) => Number(k.slice(2)));
    expect(Math.min(...keys)).toBeGreaterThan(500000 - 1000);
    expect(Math.max(...keys)).toBeLessThan(500000 + 1000);
  });

  it('--compare marks a test that got error replies instead of reporting their speed as the server\'s', async () => {
    const demo = await runCliServe();
    try {
      const run = await runCli([...base(), '-t', 'set,incr', '-n', '2000', '--compare', `127.0.0.1:${demo.port}`]);
      expect(run.code).toBe(3);
      // Every INCR reply from the kvstore-shaped server was an error: no rate is shown for it.
      expect(run.stdout).toMatch(/\| INCR\s+\| \d+\.\d\d\s+\| all errors\s+\| n\/a/);
      expect(run.stderr).toMatch(/INCR: 2000 error replies, first: ERR unknown command 'incr'/);
    } finally {
      demo.stop();
    }
  });

  it('a value size range gives each key its own size, and reads still verify', async () => {
    redis.current.cli('FLUSHALL');
    const args = [...base(), '--value-size', '32-1024', '--keyspace', '300', '--key-prefix', 'vr:'];
    const { run, result } = await runJson([...args, '--mode', 'get', '--verify-get', '--requests', '5000']);
    expect(run.code).toBe(0);
    expect(result.mismatches).toBe(0);
    const sizes = new Set([1, 2, 3, 4, 5, 6, 7, 8].map((i) => Number(redis.current.cli('STRLEN', `vr:${i}`))));
    expect(sizes.size).toBeGreaterThan(4);
    for (const s of sizes) {
      expect(s).toBeGreaterThanOrEqual(32);
      expect(s).toBeLessThanOrEqual(1024);
    }
  });
});

// Every I/O backend: with values this large, io_uring once kept 4-13 of 64 requests in flight under load and
// 18-20 on a quiet machine (epoll 30-33; 25 with ten busy loops beside it), handing the kernel one 200 KB request
// per send per loop turn (issue 21; docs/native.md "Large values"). A quarter of the window is the bound a busy
// machine keeps on every backend (io_uring now 37-41 under that load).
describe.each(ioEngines())('engine %s', (engine) => {
  it('large values still fill the pipeline window, written, read and mixed', async () => {
    const base = ['--engine', engine, '--port', String(redis.current.port), '-d', '200000', '-n', '2000', '-r', '200', '-P', '64', '--key-prefix', 'big:'];
    // SET first: GET then reads 200 KB values back, and the mix does both.
    for (const mode of ['set', 'get', 'mixed']) {
      const { run, result } = await runJson([...base, '--mode', mode]);
      expect(run.code).toBe(0);
      if (mode === 'get') expect(result.misses).toBe(0);
      // Little's law: requests in flight = throughput x mean latency. One at a time would give ~1.
      const inFlight = (result.opsPerSec * result.latencyUs.mean) / 1e6;
      expect(inFlight, `${mode}: requests in flight`).toBeGreaterThan(16);
    }
    redis.current.cli('FLUSHALL');
  });
});
