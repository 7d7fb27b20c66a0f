/**
 * redis-benchmark's habits: `-t` run with the same flags as redis-benchmark
 * (the installed 7.x) against two fresh redis-servers must leave the same
 * thing behind — the same calls per command (INFO commandstats), the same key
 * names and types (SCAN/TYPE), the same sizes — and `-h` is the host, a
 * command on the line is benchmarked, `--version` answers.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { commandCalls, type RedisServer, runCli, runCliUntil, runJson, startRedis } from './helpers/servers.js';

const hasRedisBenchmark = spawnSync('redis-benchmark', ['--version'], { encoding: 'utf8' }).status === 0;

/** What redis-benchmark (CONFIG GET at start) and redis-cli send besides the benchmark. */
const HOUSEKEEPING = /^(config\||info$|command\||client\||hello$)/;

/** Calls per benchmarked command, read before the test sends anything else. */
function benchmarkCalls(server: RedisServer): Record<string, number> {
  return Object.fromEntries(Object.entries(commandCalls(server)).filter(([name]) => !HOUSEKEEPING.test(name)));
}

function hitsAndMisses(server: RedisServer): { hits: number; misses: number } {
  const stats = server.cli('INFO', 'stats');
  const field = (name: string) => Number(new RegExp(`${name}:(\\d+)`).exec(stats)?.[1]);
  return { hits: field('keyspace_hits'), misses: field('keyspace_misses') };
}

/** Every key with its type and size ("string 3", "list 1500"), read in one server-side script rather than two redis-cli calls a key. */
const KEY_SHAPES = `local out = {}
local sizes = { string = 'STRLEN', list = 'LLEN', set = 'SCARD', hash = 'HLEN', zset = 'ZCARD' }
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local kind = redis.call('TYPE', key).ok
    local size = sizes[kind]
    out[#out + 1] = key
    out[#out + 1] = kind .. ' ' .. (size and tostring(redis.call(size, key)) or '?')
  end
until cursor == '0'
return out`;

function keysWithShape(server: RedisServer): Record<string, string> {
  const lines = server.cli('EVAL', KEY_SHAPES, '0').split('\n').filter((l) => l !== '');
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < lines.length; i += 2) out[lines[i]] = lines[i + 1];
  return out;
}

/** Sum of the INCR counters: each INCR adds one, whichever key it drew. */
function counterTotal(server: RedisServer): number {
  const script = `local total, cursor = 0, '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', 'counter:*', 'COUNT', 1000)
  cursor = page[1]
  for _, key in ipairs(page[2]) do total = total + tonumber(redis.call('GET', key)) end
until cursor == '0'
return total`;
  return Number(server.cli('EVAL', script, '0').trim());
}

const servers: RedisServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function twoServers(): Promise<[RedisServer, RedisServer]> {
  const a = await startRedis();
  const b = await startRedis();
  servers.push(a, b);
  return [a, b];
}

function redisBenchmark(server: RedisServer, flags: string[]): void {
  const r = spawnSync('redis-benchmark', ['-p', String(server.port), '-q', ...flags], { encoding: 'utf8', timeout: 120_000 });
  if (r.status !== 0) throw new Error(`redis-benchmark ${flags.join(' ')} failed: ${r.stderr}`);
}

// SPOP and ZPOPMIN empty their key as far as the draws allow, so the sizes they leave depend on
// the draws; the deterministic tests are compared key by key, all of them call by call.
const STABLE = 'ping,set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,zadd,lrange,mset';
const ALL = `${STABLE},spop,zpopmin`;

describe.each(engines())('engine %s', (engine) => {
  it.skipIf(!hasRedisBenchmark)('-t with -r leaves what redis-benchmark leaves: calls, key names, types, sizes', async () => {
    const [theirs, ours] = await twoServers();
    // -r 40 with 1500 draws per test: every number in [0, 40) is drawn, so both key sets are complete.
    const flags = ['-t', STABLE, '-n', '1500', '-r', '40'];
    redisBenchmark(theirs, flags);
    const run = await runCli(['--engine', engine, '-h', '127.0.0.1', '-p', String(ours.port), ...flags]);
    expect(run.code, run.stderr).toBe(0);
    expect(benchmarkCalls(ours)).toEqual(benchmarkCalls(theirs));
    expect(hitsAndMisses(ours)).toEqual(hitsAndMisses(theirs));
    const shape = keysWithShape(ours);
    expect(shape).toEqual(keysWithShape(theirs));
    expect(shape['key:000000000007']).toBe('string 3');
    expect(shape['counter:000000000039']).toMatch(/^string /);
    expect(shape).toMatchObject({ mylist: 'list 1500', myset: 'set 40', myhash: 'hash 40', myzset: 'zset 40' });
    expect(counterTotal(ours)).toBe(1500);
  });

  it("-t … -q: stdout is one line per test, as redis-benchmark -q's; the header, which says what ran, on stderr", async () => {
    const [, ours] = await twoServers();
    const run = await runCli(['--engine', engine, '-p', String(ours.port), '-t', 'set,get', '-n', '300', '-q']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').map((l) => l.replace(/[\d.]+/g, 'N'))).toEqual(['SET: N requests per second, pN=N msec', 'GET: N requests per second, pN=N msec']);
    expect(run.stderr).toMatch(/^respbench -t · engine /m);
  });

  it.skipIf(!hasRedisBenchmark)('-t without -r uses one literal key per command, as redis-benchmark; defaults -c 50 -P 1 -d 3', async () => {
    const [theirs, ours] = await twoServers();
    const flags = ['-t', ALL, '-n', '1000'];
    redisBenchmark(theirs, flags);
    const run = await runCli(['--engine', engine, '-p', String(ours.port), ...flags]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n')[1]).toMatch(/1000 requests per test, 50 connections, pipeline 1, value 3 B, keys: one per test/);
    expect(benchmarkCalls(ours)).toEqual(benchmarkCalls(theirs));
    expect(hitsAndMisses(ours)).toEqual(hitsAndMisses(theirs));
    expect(keysWithShape(ours)).toEqual(keysWithShape(theirs));
    expect(keysWithShape(ours)).toMatchObject({ 'key:__rand_int__': 'string 3', 'counter:__rand_int__': 'string 4' });
    const labels = run.stdout.trim().split('\n').slice(3).map((l) => l.split(':')[0]);
    expect(labels).toEqual([
      'PING_INLINE',
      'PING_MBULK',
      'SET',
      'GET',
      'INCR',
      'LPUSH',
      'RPUSH',
      'LPOP',
      'RPOP',
      'SADD',
      'HSET',
      'SPOP',
      'ZADD',
      'ZPOPMIN',
      'LPUSH (needed to benchmark LRANGE)',
      'LRANGE_100 (first 100 elements)',
      'LRANGE_300 (first 300 elements)',
      'LRANGE_500 (first 500 elements)',
      'LRANGE_600 (first 600 elements)',
      'MSET (10 keys)',
    ]);
  });

  it('each test draws afresh: GET after SET over a large keyspace mostly misses, and counts as gets', async () => {
    const [, ours] = await twoServers();
    const { run, result } = await runJson(['--engine', engine, '-p', String(ours.port), '-t', 'get,set', '-n', '2000', '-r', '1000000']);
    expect(run.code, run.stderr).toBe(0);
    const get = result.find((l: { test: string }) => l.test === 'get').result;
    expect(get).toMatchObject({ gets: 2000, sets: 0, requests: 2000 });
    // Replaying SET's numbers would make every read a hit.
    expect(get.misses).toBeGreaterThan(1900);
    expect(Number.isInteger(get.elapsedNs)).toBe(true);
  });

  it('-q without -t prints the short line for a command on the line, as redis-benchmark -q; --precision sets its decimals', async () => {
    const [, ours] = await twoServers();
    const command = await runCli(['--engine', engine, '-p', String(ours.port), '-q', '-n', '1000', 'INCR', 'counter']);
    expect(command.code, command.stderr).toBe(0);
    expect(command.stdout).toMatch(/^INCR counter: \d+\.\d\d requests per second, p50=\d+\.\d{3} msec\n$/);
    const precise = await runCli(['--engine', engine, '-p', String(ours.port), '-q', '-n', '1000', '--precision', '5', 'SET', 'k', 'v']);
    expect(precise.code, precise.stderr).toBe(0);
    expect(precise.stdout).toMatch(/^SET k v: \d+\.\d\d requests per second, p50=\d+\.\d{5} msec\n$/);
    const table = await runCli(['--engine', engine, '-p', String(ours.port), '-n', '1000', '--mode', 'set', '--precision', '3']);
    const row = table.stdout.split('\n')[table.stdout.split('\n').findIndex((l) => /^\s*ops\/s/.test(l)) + 1];
    // ops/s, avg us/op, elapsed s, then the latency columns at 3 decimals.
    expect(row.trim().split(/\s+/).slice(3)).toEqual(expect.arrayContaining([expect.stringMatching(/^\d+\.\d{3}$/)]));
    expect(row.trim().split(/\s+/).slice(3).every((v) => /^\d+\.\d{3}$/.test(v))).toBe(true);
  });

  it('-q on a plain run prints a short line per command row instead of the table; error lines, the exit code and --json as without -q', async () => {
    const [, ours] = await twoServers();
    const mixed = await runCli(['--engine', engine, '-p', String(ours.port), '-q', '-n', '2000', '--mode', 'mixed', '--set-ratio', '20', '--seed', '3']);
    expect(mixed.code, mixed.stderr).toBe(0);
    const lines = mixed.stdout.trimEnd().split('\n');
    expect(lines.map((l) => l.replace(/[\d.]+ requests per second, p50=\d+\.\d{3} msec$/, 'N'))).toEqual(['SET: N', 'GET: N']);
    // Each row's own rate: a fifth of the requests are SETs.
    const [set, get] = lines.map((l) => Number(/: ([\d.]+) requests/.exec(l)![1]));
    expect(set).toBeLessThan(get / 2);
    const mix = await runCli(['--engine', engine, '-p', String(ours.port), '-q', '-n', '600', '--command', 'SET __key__ __data__', '--command', 'INCR c:__key__']);
    expect(mix.code, mix.stderr).toBe(0);
    expect(mix.stdout).toMatch(/^SET: [\d.]+ requests per second, p50=[\d.]+ msec\nINCR: [\d.]+ requests per second, p50=[\d.]+ msec\n$/);
    // Redis's HSET wants key field value: every reply an error, said as the table says it.
    const errors = await runCli(['--engine', engine, '-p', String(ours.port), '-q', '-n', '300', '--mode', 'set', '--set-cmd', 'HSET']);
    expect(errors.code).toBe(3);
    expect(errors.stdout).toMatch(/^no rate: all 300 replies were errors\nERROR REPLIES: 300, first: ERR wrong number of arguments for 'hset' command\nhint: Redis's HSET takes key field value/);
    const json = await runJson(['--engine', engine, '-p', String(ours.port), '-q', '-n', '300', '--mode', 'set']);
    expect(json.run.code).toBe(0);
    expect(json.result.requests).toBe(300);
  });

  it('-l runs again and again until interrupted, each result printed; SIGINT ends it with 130', async () => {
    const [, ours] = await twoServers();
    const run = await runCliUntil(['--engine', engine, '-p', String(ours.port), '-q', '-l', '-n', '500', 'SET', 'k', 'v'], /(^SET k v: .*\n){3}/m);
    expect(run.code, run.stderr).toBe(130);
    expect(run.stdout.split('\n').filter((l) => /^SET k v: \d+\.\d\d requests per second/.test(l)).length).toBeGreaterThanOrEqual(3);
    expect(benchmarkCalls(ours).set).toBeGreaterThanOrEqual(1500);
  });

  it('-I opens -c connections and holds them, sending nothing, until interrupted', async () => {
    const [, ours] = await twoServers();
    const run = await runCliUntil(['--engine', engine, '-p', String(ours.port), '-I', '-c', '7'], /idle: 7 connections open/);
    // Counted by the server while they were open: the run is over now, read the stats it left.
    const clients = Number(/total_connections_received:(\d+)/.exec(ours.cli('INFO', 'stats'))?.[1]);
    expect(run.code, run.stderr).toBe(130);
    expect(clients).toBeGreaterThanOrEqual(7);
    expect(run.stdout).toMatch(/idle: 7 connections were open; stopped by SIGINT/);
    expect(benchmarkCalls(ours)).not.toHaveProperty('set');
    expect(benchmarkCalls(ours)).not.toHaveProperty('get');
  });

  it("memtier's spellings: --ratio 1:4 is a mix of SET and GET so weighted, --test-time seconds, --data-size, --key-maximum, --key-pattern R:R", async () => {
    const [, ours] = await twoServers();
    const { run, result } = await runJson(['--engine', engine, '-p', String(ours.port), '--ratio', '1:4', '--data-size', '10', '--key-maximum', '99', '--key-pattern', 'R:R', '-n', '5000', '--seed', '7']);
    expect(run.code, run.stderr).toBe(0);
    expect(result.plan).toMatchObject({ keyspace: 100, valueSizeMin: 10, valueSizeMax: 10, keyPattern: 'uniform' });
    expect(result.plan.commands.map((c: { weight: number }) => c.weight)).toEqual([1, 4]);
    const calls = benchmarkCalls(ours);
    expect(calls.set + calls.get).toBe(5000);
    expect(calls.get / calls.set).toBeGreaterThan(3.5);
    expect(calls.get / calls.set).toBeLessThan(4.5);
    // memtier's --requests is per client; ours stays the total, and it says so beside memtier's flags.
    expect(run.stderr).toContain("respbench: note: -n/--requests is the total over all connections, not per client as memtier_benchmark's --requests");
    const timed = await runJson(['--engine', engine, '-p', String(ours.port), '--test-time', '1', '--mode', 'set']);
    expect(timed.run.code, timed.run.stderr).toBe(0);
    expect(timed.result.plan.durationMs).toBe(1000);
  });

  it('a command on the line is benchmarked as redis-benchmark does: INCR counter:__rand_int__', async () => {
    const [, ours] = await twoServers();
    const run = await runCli(['--engine', engine, '-p', String(ours.port), '-n', '3000', '-r', '10', 'INCR', 'counter:__rand_int__']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split('\n')[1]).toMatch(/^workload: command INCR counter:__rand_int__, 3000 requests, 50 connections, pipeline 1,/);
    expect(benchmarkCalls(ours).incr).toBe(3000);
    expect(counterTotal(ours)).toBe(3000);
    expect(ours.cli('EXISTS', 'counter:000000000009')).toBe('1');
  });
});

describe('redis-benchmark flags', () => {
  it('-h is the host; -h without a value says so; --help is help', async () => {
    const [server] = await twoServers();
    const run = await runCli(['--engine', 'js', '-h', '127.0.0.1', '-p', String(server.port), '-t', 'set', '-n', '500']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^SET: \d+\.\d\d requests per second/m);
    expect(benchmarkCalls(server).set).toBe(500);
    const bare = await runCli(['-p', String(server.port), '-h']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toBe('respbench: -h needs a host (-h is the host, as in redis-benchmark; help is --help)\n');
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/-h, --host <ip>/);
  });

  it('--compare names both targets and gives the first as a percentage of the second', async () => {
    const [kv, redis] = await twoServers();
    const run = await runCli(['--engine', 'js', '-p', String(kv.port), '-t', 'set,get', '-n', '2000', '-r', '100', '--compare', `redis=127.0.0.1:${redis.port}`, '--target-name', 'kvstore']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("kvstore vs redis: kvstore's ops/s as a percentage of redis's");
    expect(run.stdout).toMatch(/^\| test +\| kvstore ops\/s +\| redis ops\/s +\| kvstore vs redis +\|/m);
    for (const label of ['SET', 'GET']) {
      const row = new RegExp(`^\\| ${label} +\\| (\\d+\\.\\d\\d) +\\| (\\d+\\.\\d\\d) +\\| (\\d+\\.\\d)%`, 'm').exec(run.stdout);
      expect(row, run.stdout).not.toBeNull();
      expect(Number(row![3])).toBeCloseTo((100 * Number(row![1])) / Number(row![2]), 0);
    }
  });

  it('--version names the version, the engines and the Node/napi versions', async () => {
    const run = await runCli(['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^respbench \d+\.\d+\.\d+\nengines: .*\nnode \d+\.\d+\.\d+ · napi \d+ · \w+-\w+\n$/);
  });
});
