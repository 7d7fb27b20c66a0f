/**
 * One run, as users run it: the original tool's command lines (scaled down) against a
 * real redis-server, and the kvstore shapes against the built-in demo server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { CLI, freePort, runCli, runJson, startRedis, waitForPort, type RedisServer } from './helpers/servers.js';

describe.each(engines())('engine %s', (engineName) => {
  const engine = ['--engine', engineName];

  describe('against redis-server', () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await startRedis();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it('set mode writes exactly the keys it drew, and reports its figures', async () => {
      redis.cli('FLUSHALL');
      const { run, result } = await runJson([...engine, '--port', String(redis.port), '--mode', 'set', '--requests', '30000', '--pipeline', '128', '--keyspace', '1000', '--value-size', '32', '--key-prefix', 'bench:ts:set:', '--seed', '12345']);
      expect(run.code).toBe(0);
      expect(result.requests).toBe(30000);
      expect(result.ok).toBe(30000);
      expect(result.sets).toBe(30000);
      expect(result.errors).toBe(0);
      expect(result.opsPerSec).toBeGreaterThan(0);
      expect(result.avgUsPerOp).toBeCloseTo((result.elapsedSec * 1e6) / result.requests, 6);
      expect(result.latencyUs.p50).toBeGreaterThan(0);
      expect(result.latencyUs.p99).toBeGreaterThanOrEqual(result.latencyUs.p50);
      expect(result.latencyUs.max).toBeGreaterThanOrEqual(result.latencyUs.p999);
      const counted = result.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
      expect(counted).toBe(30000);
      // 30000 uniform draws over 1000 keys touch every key.
      expect(Number(redis.cli('DBSIZE'))).toBe(1000);
      const value = redis.cli('GET', 'bench:ts:set:7');
      expect(value).toHaveLength(32);
    });

    it('get mode with --verify-get preloads, reads and finds no mismatch', async () => {
      redis.cli('FLUSHALL');
      const { run, result } = await runJson([...engine, '--port', String(redis.port), '--mode', 'get', '--requests', '30000', '--pipeline', '128', '--keyspace', '5000', '--verify-get', '--key-prefix', 'bench:ts:get:', '--seed', '7']);
      expect(run.code).toBe(0);
      expect(result.preloadRequests).toBe(5000);
      expect(result.gets).toBe(30000);
      expect(result.misses).toBe(0);
      expect(result.mismatches).toBe(0);
      expect(Number(redis.cli('DBSIZE'))).toBe(5000);
    });

    it('get mode verifies values written by an earlier set run, and finds corrupted ones', async () => {
      redis.cli('FLUSHALL');
      const base = [...engine, '--port', String(redis.port), '--requests', '20000', '--keyspace', '200', '--key-prefix', 'bench:corrupt:', '--seed', '99'];
      const write = await runCli([...base, '--mode', 'set', '-q']);
      expect(write.code).toBe(0);
      const clean = await runJson([...base, '--mode', 'get', '--no-preload', '--verify-get']);
      expect(clean.result.mismatches).toBe(0);
      expect(clean.result.misses).toBe(0);
      // Behind the tool's back: one key gets another key's value, one a wrong length.
      redis.cli('SET', 'bench:corrupt:5', redis.cli('GET', 'bench:corrupt:6'));
      redis.cli('SET', 'bench:corrupt:9', 'short');
      const { run, result } = await runJson([...base, '--mode', 'get', '--no-preload', '--verify-get']);
      expect(run.code).toBe(4);
      expect(result.mismatches).toBeGreaterThan(0);
      expect(result.firstMismatch).toMatch(/bench:corrupt:(5|9)/);
      const human = await runCli([...base, '--mode', 'get', '--no-preload', '--verify-get']);
      expect(human.code).toBe(4);
      expect(human.stdout).toMatch(/VERIFY FAILED: \d+ reads returned another value/);
    });

    it('mixed mode splits writes and reads by --set-ratio and counts nils as misses', async () => {
      redis.cli('FLUSHALL');
      const { run, result } = await runJson([...engine, '--port', String(redis.port), '--mode', 'mixed', '--set-ratio', '20', '--requests', '40000', '--keyspace', '100000', '--verify-get', '--seed', '3']);
      expect(run.code).toBe(0);
      expect(result.sets + result.gets).toBe(40000);
      expect(result.sets / 40000).toBeGreaterThan(0.18);
      expect(result.sets / 40000).toBeLessThan(0.22);
      expect(result.misses).toBeGreaterThan(0);
      expect(result.mismatches).toBe(0);
    });

    it('several connections share the requests and each has its own key stream', async () => {
      redis.cli('FLUSHALL');
      const { run, result } = await runJson([...engine, '--port', String(redis.port), '--mode', 'set', '-c', '3', '--requests', '10001', '--keyspace', '1000000', '--seed', '1']);
      expect(run.code).toBe(0);
      expect(result.requests).toBe(10001);
      // Distinct streams: nearly every one of 10001 draws over a million keys is a new key.
      expect(Number(redis.cli('DBSIZE'))).toBeGreaterThan(9900);
    });

    it('the same seed sends the same keys and values', async () => {
      const args = [...engine, '--port', String(redis.port), '--mode', 'set', '--requests', '3000', '--keyspace', '100000000', '--seed', '4242', '-q'];
      redis.cli('FLUSHALL');
      await runCli(args);
      const first = redis.cli('DEBUG', 'DIGEST');
      redis.cli('FLUSHALL');
      await runCli(args);
      expect(redis.cli('DEBUG', 'DIGEST')).toBe(first);
      redis.cli('FLUSHALL');
      await runCli(args.map((a) => (a === '4242' ? '4243' : a)));
      expect(redis.cli('DEBUG', 'DIGEST')).not.toBe(first);
    });

    it("shows the first error reply and a hint when Redis rejects the kvstore's HSET shape", async () => {
      const run = await runCli([...engine, '--port', String(redis.port), '--mode', 'set', '--set-cmd', 'HSET', '--requests', '2000', '--key-prefix', 'bench:hsetshape:']);
      expect(run.code).toBe(3);
      expect(run.stdout).toMatch(/ERROR REPLIES: 2000, first: ERR wrong number of arguments/);
      expect(run.stdout).toMatch(/hint: Redis's HSET takes key field value/);
    });

    it('prints the time-based seed so a run can be repeated', async () => {
      const run = await runCli([...engine, '--port', String(redis.port), '--requests', '1000']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/seed \d+/);
    });
  });

  describe('against the kvstore-shaped demo server (respbench serve)', () => {
    let server: ChildProcess;
    let port: number;
    beforeAll(async () => {
      port = await freePort();
      server = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { stdio: 'ignore' });
      await waitForPort(port);
    });
    afterAll(() => {
      server?.kill('SIGKILL');
    });

    for (const [setCmd, getCmd] of [
      ['RSET', 'RGET'],
      ['HSET', 'HGET'],
    ]) {
      it(`${setCmd}/${getCmd}: the original tool's kvstore lines write, then read back verified`, async () => {
        const common = [...engine, '--host', '127.0.0.1', '--port', String(port), '--set-cmd', setCmd, '--get-cmd', getCmd, '--requests', '30000', '--pipeline', '128', '--keyspace', '10000', '--value-size', '32'];
        const set = await runJson([...common, '--mode', 'set', '--key-prefix', 'bench:ts:set:']);
        expect(set.run.code).toBe(0);
        expect(set.result.ok).toBe(30000);
        const get = await runJson([...common, '--mode', 'get', '--verify-get', '--key-prefix', 'bench:ts:get:']);
        expect(get.run.code).toBe(0);
        expect(get.result.gets).toBe(30000);
        expect(get.result.mismatches).toBe(0);
        expect(get.result.misses).toBe(0);
      });
    }

    it('--embedded starts its own demo server for the run and stops it', async () => {
      const run = await runCli([...engine, '--embedded', '--requests', '20000', '--verify-get', '--mode', 'get', '--set-cmd', 'RSET', '--get-cmd', 'RGET']);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/mismatches 0/);
    });
  });

});

describe('respbench serve', () => {
  it('stops on SIGTERM even while a client is connected', async () => {
    const port = await freePort();
    const server = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { stdio: 'ignore' });
    await waitForPort(port);
    const client = net.connect(port, '127.0.0.1');
    // The server stopping may reset this connection: an error here is expected, not a test failure.
    client.on('error', () => undefined);
    await new Promise((r) => client.once('connect', r));
    const exited = new Promise<number | null>((r) => server.once('exit', (code) => r(code)));
    server.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 3000))]);
    client.destroy();
    if (code === 'still running') server.kill('SIGKILL');
    expect(code).toBe(0);
  });
});

describe('when the server is not there', () => {
  const engine = ['--engine', 'js'];
  it('a refused connection exits 1 with a clear message within seconds', async () => {
    const port = await freePort();
    const run = await runCli([...engine, '--port', String(port), '--requests', '1000'], 15_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`connection refused by 127.0.0.1:${port}`));
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.ms).toBeLessThan(5000);
  });
});
