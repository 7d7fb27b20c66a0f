/**
 * Weighted command mixes (--command/--weight/--command-key-pattern) against a
 * real redis-server: the server's own command counts show the proportions,
 * both engines send the same commands and leave the same dataset, each
 * command gets its row, and --verify-get in a mix catches a value changed
 * behind the run's back.
 */
import { describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { commandCalls, runCli, runJson, useRedis } from './helpers/servers.js';

const redis = useRedis();

const MIX = ['--command', 'GET __key__', '--weight', '80', '--command', 'SET', '--weight', '15', '--command', 'INCR mix:n:__key__', '--weight', '5', '--command-key-pattern', 'zipf'];

describe('weighted command mixes', () => {
  it('80/15/5 over 100k requests: the server counts those proportions within 1 point, the same calls and dataset from both engines', async () => {
    const seen: { engine: string; calls: Record<string, number>; digest: string; rows: string[] }[] = [];
    for (const engine of engines()) {
      redis.current.cli('FLUSHALL');
      redis.current.cli('CONFIG', 'RESETSTAT');
      const { run, result } = await runJson(['--engine', engine, '--port', String(redis.current.port), ...MIX, '-n', '100000', '-c', '4', '-P', '64', '-r', '5000', '--seed', '7', '--key-prefix', 'mix:']);
      expect(run.code, run.stderr).toBe(0);
      expect(result.errors).toBe(0);
      const calls = commandCalls(redis.current);
      seen.push({ engine, calls: { get: calls.get, set: calls.set, incr: calls.incr }, digest: redis.current.cli('DEBUG', 'DIGEST'), rows: result.perCommand.map((r: { command: string }) => r.command) });
      const total = calls.get + calls.set + calls.incr;
      expect(total).toBe(100_000);
      expect(Math.abs(calls.get / total - 0.8)).toBeLessThan(0.01);
      expect(Math.abs(calls.set / total - 0.15)).toBeLessThan(0.01);
      expect(Math.abs(calls.incr / total - 0.05)).toBeLessThan(0.01);
      // One row per command, counted by the client as the server counted them.
      const byName = Object.fromEntries(result.perCommand.map((r: { command: string; requests: number }) => [r.command, r.requests]));
      expect(byName).toEqual({ GET: calls.get, SET: calls.set, INCR: calls.incr, Totals: 100_000 });
      expect(result.plan.commands).toEqual([
        { template: 'GET __key__', weight: 80, keyPattern: null },
        { template: 'SET', weight: 15, keyPattern: null },
        { template: 'INCR mix:n:__key__', weight: 5, keyPattern: 'zipf' },
      ]);
    }
    if (seen.length === 2) {
      expect(seen[1].calls).toEqual(seen[0].calls);
      expect(seen[1].digest).toBe(seen[0].digest);
      expect(seen[1].rows).toEqual(seen[0].rows);
    }
  });

  it.each(engines())('engine %s: --verify-get in a mix catches a value corrupted behind its back', async (engine) => {
    redis.current.cli('FLUSHALL');
    const base = ['--engine', engine, '--port', String(redis.current.port), '-r', '20', '--seed', '3', '--key-prefix', 'mixv:', '-P', '8'];
    // First a clean mix writes and reads the 20 keys: it verifies.
    const mix = ['--command', 'SET', '--weight', '1', '--command', 'GET', '--weight', '3', '--verify-get'];
    const clean = await runJson([...base, ...mix, '-n', '2000']);
    expect(clean.run.code, clean.run.stderr).toBe(0);
    expect(clean.result.mismatches).toBe(0);
    // Then a mix that only reads (GET, and a PING beside it), after one value was changed.
    redis.current.cli('SET', 'mixv:7', 'not the value respbench wrote');
    const reads = await runJson([...base, '--command', 'GET', '--weight', '9', '--command', 'PING __key__', '--verify-get', '-n', '2000']);
    expect(reads.run.code).toBe(4);
    expect(reads.result.mismatches).toBeGreaterThan(0);
    expect(reads.result.firstMismatch).toMatch(/^key mixv:7: /);
    expect(reads.result.perCommand.map((r: { command: string }) => r.command)).toEqual(['GET', 'PING', 'Totals']);
  });

  it.each(engines())('engine %s: two commands of one name get rows of their own, and the interval series splits them too', async (engine) => {
    redis.current.cli('FLUSHALL');
    const { run, result } = await runJson([
      '--engine', engine, '--port', String(redis.current.port), '-n', '3000', '--seed', '1', '--key-prefix', 'mixd:', '--interval', '100ms',
      '--command', 'SET', '--weight', '2', '--command', 'SET __key__ __data__ XX', '--command', 'GET',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const rows = result.perCommand as { command: string; requests: number }[];
    expect(rows.map((r) => r.command)).toEqual(['SET#1', 'SET#2', 'GET', 'Totals']);
    expect(rows[0].requests + rows[1].requests + rows[2].requests).toBe(3000);
    expect(rows[0].requests).toBeGreaterThan(rows[1].requests);
    for (const e of result.series) expect(e.perCommand.map((c: { command: string }) => c.command)).toEqual(['SET#1', 'SET#2', 'GET']);
    const seriesTotal = result.series.reduce((n: number, e: { perCommand: { requests: number }[] }) => n + e.perCommand.reduce((m, c) => m + c.requests, 0), 0);
    expect(seriesTotal).toBe(3000);
  });

  it('a --command with no __key__ (INCR ctr:__rand_int__) is sent as written beside verified reads: the same calls and dataset from both engines, said once', async () => {
    const seen: { calls: Record<string, number>; digest: string }[] = [];
    for (const engine of engines()) {
      redis.current.cli('FLUSHALL');
      redis.current.cli('CONFIG', 'RESETSTAT');
      const args = ['--engine', engine, '--port', String(redis.current.port), '--command', 'INCR ctr:__rand_int__', '--command', 'SET', '--command', 'GET __key__', '--weight', '2'];
      const { run, result } = await runJson([...args, '-n', '3000', '-r', '50', '--seed', '11', '--verify-get', '--key-prefix', 'kl:']);
      expect(run.code, run.stderr).toBe(0);
      expect(result).toMatchObject({ errors: 0, mismatches: 0, lostWrites: 0 });
      expect(run.stderr.match(/has no __key__: sent as written/g)).toHaveLength(1);
      const calls = commandCalls(redis.current);
      const counters = redis.current.cli('--scan', '--pattern', 'ctr:*').split('\n').filter((k) => k !== '');
      // Each INCR drew its own __rand_int__ (0..49, twelve digits), none took a key of the keyspace.
      expect(counters.length).toBeGreaterThan(1);
      expect(counters.every((k) => /^ctr:\d{12}$/.test(k))).toBe(true);
      expect(counters.reduce((n, k) => n + Number(redis.current.cli('GET', k)), 0)).toBe(calls.incr);
      seen.push({ calls: { incr: calls.incr, set: calls.set, get: calls.get }, digest: redis.current.cli('DEBUG', 'DIGEST') });
    }
    for (const s of seen.slice(1)) expect(s).toEqual(seen[0]);
  });

  it('the human table has a row per command, and the header line names the mix', async () => {
    const run = await runCli(['--engine', 'js', '--port', String(redis.current.port), '-n', '2000', '--seed', '2', ...MIX]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('mix 80 × GET __key__ / 15 × SET / 5 × INCR mix:n:__key__ (keys zipf)');
    expect(run.stdout).toMatch(/^GET\s+\d+/m);
    expect(run.stdout).toMatch(/^SET\s+\d+/m);
    expect(run.stdout).toMatch(/^INCR\s+\d+/m);
  });
});

describe('multi-key commands', () => {
  it.each(engines())('engine %s: --multi-key-get reads MGET of n keys, each verified, and catches one corrupted key', async (engine) => {
    redis.current.cli('FLUSHALL');
    redis.current.cli('CONFIG', 'RESETSTAT');
    const base = ['--engine', engine, '--port', String(redis.current.port), '-r', '300', '--seed', '5', '--key-prefix', 'mk:', '--mode', 'get', '--multi-key-get', '4', '--verify-get', '-n', '3000'];
    const clean = await runJson(base);
    expect(clean.run.code, clean.run.stderr).toBe(0);
    // Get mode's preload wrote every key (a request reads four): nothing missing, every value verified.
    expect(clean.result).toMatchObject({ requests: 3000, ok: 3000, misses: 0, mismatches: 0, preloadRequests: 300 });
    expect(clean.result.perCommand.map((r: { command: string }) => r.command)).toEqual(['MGET', 'Totals']);
    expect(commandCalls(redis.current).mget).toBe(3000);
    redis.current.cli('SET', 'mk:42', 'changed behind its back');
    const bad = await runJson([...base, '--no-preload']);
    expect(bad.run.code).toBe(4);
    expect(bad.result.mismatches).toBeGreaterThan(0);
    expect(bad.result.firstMismatch).toMatch(/^key mk:42: 32 bytes expected, 23 received/);
  });

  it('MSET/MGET templates: the same bytes from both engines (commandstats and DEBUG DIGEST), reads verified key by key', async () => {
    const seen: { calls: Record<string, number>; digest: string }[] = [];
    for (const engine of engines()) {
      redis.current.cli('FLUSHALL');
      redis.current.cli('CONFIG', 'RESETSTAT');
      const { run, result } = await runJson([
        '--engine', engine, '--port', String(redis.current.port), '-n', '6000', '-c', '2', '-r', '400', '--seed', '9', '--key-prefix', 'mk2:', '--verify-get',
        '--command', 'MSET __key__ __data__ __key__ __data__ __key__ __data__', '--command', 'MGET __key__ __key__', '--weight', '2',
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(result.mismatches).toBe(0);
      expect(result.perCommand.map((r: { command: string }) => r.command)).toEqual(['MSET', 'MGET', 'Totals']);
      const calls = commandCalls(redis.current);
      seen.push({ calls: { mset: calls.mset, mget: calls.mget }, digest: redis.current.cli('DEBUG', 'DIGEST') });
      // Each MSET wrote three keys with the values derived from them.
      expect(calls.mset + calls.mget).toBe(6000);
    }
    if (seen.length === 2) expect(seen[1]).toEqual(seen[0]);
  });
});
