/**
 * The native engine sends what the JS engine sends: the same Plans through
 * both (the CLI with --json --engine js|native) against one redis-server,
 * comparing what reached the server (DEBUG DIGEST of the whole dataset after
 * FLUSHALL and one run) and the counters. Verification through the native
 * engine must find values that were corrupted behind its back.
 *
 * Under RESPBENCH_REQUIRE_NATIVE=1 (CI) the addon must load; elsewhere the
 * file is skipped when it does not (helpers/engines.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bothEngines, engineOf, ioBackends } from './helpers/engines.js';
import { runJson, startRedis, type RedisServer } from './helpers/servers.js';

const native = bothEngines();

/** Counters that depend only on the Plan, never on timing. */
const COUNTERS = ['requests', 'sets', 'gets', 'ok', 'errors', 'misses', 'mismatches', 'bytesOut', 'bytesIn', 'preloadRequests'] as const;

let redis: RedisServer;

beforeAll(async () => {
  if (native) redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

/** The native engine on each I/O backend that runs here (io_uring and epoll): each must send what the JS engine sends. */
const NATIVES = native ? ioBackends().map((io) => `native/${io}`) : [];

async function runOn(engine: string, args: string[]): Promise<any> {
  const { run, result } = await runJson(['--engine', engine, '--port', String(redis.port), '-q', '--timeout', '10s', ...args], 90_000);
  expect(result.engine, `${engine}: ${run.stderr}`).toBe(engineOf(engine));
  return result;
}

/** FLUSHALL, one run, DEBUG DIGEST: a fingerprint of every key and value the run left. */
async function digestAfter(engine: string, args: string[]): Promise<{ digest: string; result: any }> {
  redis.cli('FLUSHALL');
  const result = await runOn(engine, args);
  expect(result.failure, JSON.stringify(result.failure)).toBeNull();
  return { digest: redis.cli('DEBUG', 'DIGEST'), result };
}

function counters(result: any): Record<string, number> {
  return Object.fromEntries(COUNTERS.map((k) => [k, result[k]]));
}

const WORKLOADS: Array<[name: string, args: string[]]> = [
  ['set, 4 connections on 2 threads', ['--mode', 'set', '-n', '20000', '-c', '4', '--threads', '2', '-P', '32', '-r', '5000', '--seed', '11']],
  ['HSET template with a value size range', ['--mode', 'set', '--set-cmd', 'HSET __key__ field __data__', '-d', '8-200', '-n', '10000', '-c', '3', '-r', '3000', '--seed', '12']],
  ['__rand_int__ inside an argument', ['--mode', 'set', '--set-cmd', 'HSET __key__ f:__rand_int__ __data__', '-n', '5000', '-c', '2', '-r', '100000', '--seed', '13']],
  // The template grammar (docs/workload.md): quotes, escapes and an empty argument, byte for byte.
  ['quoted template with escapes', ['--mode', 'set', '--set-cmd', 'HSET "h:__key__" "f \\x00\\xff\\"q\\"\\t" __data__ \'\' \'it\\\'s\'', '-n', '4000', '-c', '2', '-r', '500', '--seed', '20']],
  ['zipf keys', ['--mode', 'set', '--key-pattern', 'zipf', '-n', '10000', '-c', '2', '-r', '100000', '--seed', '14']],
  ['gaussian keys', ['--mode', 'set', '--key-pattern', 'gaussian', '--key-stddev', '300', '-n', '10000', '-c', '2', '-r', '10000', '--seed', '15']],
  ['sequential keys', ['--mode', 'set', '--key-pattern', 'sequential', '-n', '9000', '-c', '3', '-r', '100000', '--seed', '16']],
  // One connection: reads and writes of the same key keep their order, so misses are deterministic too.
  ['mixed, one connection', ['--mode', 'mixed', '--set-ratio', '30', '-n', '20000', '-P', '16', '-r', '2000', '--seed', '17']],
  ['get with preload and verify', ['--mode', 'get', '--verify-get', '-n', '20000', '-c', '2', '-r', '5000', '-d', '8-64', '--seed', '18']],
];

describe.skipIf(!native)('native and JS engines send the same traffic', () => {
  it.each(WORKLOADS)('%s: same dataset digest and counters', async (_name, args) => {
    const js = await digestAfter('js', args);
    for (const engine of NATIVES) {
      const nat = await digestAfter(engine, args);
      expect(nat.digest, engine).toBe(js.digest);
      expect(nat.digest).not.toBe('0000000000000000000000000000000000000000');
      expect(counters(nat.result), engine).toEqual(counters(js.result));
      expect(nat.result.complete).toBe(true);
      const recorded = nat.result.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
      expect(recorded).toBe(nat.result.requests);
    }
  });

  it('verify-get through the native engine finds values corrupted behind its back, as the JS engine does', async () => {
    const base = ['-r', '200', '-n', '4000', '--key-prefix', 'bench:par:', '--seed', '19'];
    await digestAfter('native', ['--mode', 'set', '--key-pattern', 'sequential', ...base]);
    for (const i of [3, 50, 199]) redis.cli('SET', `bench:par:${i}`, 'corrupted!');
    const get = ['--mode', 'get', '--verify-get', '--no-preload', '-c', '2', ...base];
    const js = await runOn('js', get);
    for (const engine of NATIVES) {
      const nat = await runOn(engine, get);
      expect(nat.mismatches, engine).toBeGreaterThan(0);
      expect(nat.mismatches).toBe(js.mismatches);
      expect(nat.misses).toBe(0);
      expect(nat.firstMismatch).toMatch(/^key bench:par:(3|50|199): 32 bytes expected, 10 received, first difference at byte \d: expected "[0-9a-f]{8}[0-9A-Za-z]*…?", got "corrupted!"$/);
    }
  });
});
