/**
 * --cluster against a real Redis Cluster (3 primaries + 3 replicas on
 * loopback, started once for the file): hash slots agree with the server's
 * CLUSTER KEYSLOT, every request reaches its slot's primary, the dataset is
 * the one a single server gets from the same plan, and the seeds and a lost
 * node behave as docs/cluster.md says. Through both engines.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../packages/cli/src/engine-js/slot.js';
import { parse as parseCsv } from './helpers/study.js';
import { clustersAhead, expectRowsAddUp, startCluster, type ClusterShape, type TestCluster } from './helpers/cluster.js';
import { engines, ioEngines } from './helpers/engines.js';
import { CLI, clusterNodePids, newClusterNodes, REPO, runCli, runJson, startRedis, type RedisServer } from './helpers/servers.js';

let cluster: TestCluster;
let single: RedisServer;

/**
 * The clusters of the tests that need one of their own (a password on every
 * node, no replicas, a failover), one per engine where the test runs per
 * engine: started together when the first is taken.
 */
const ENGINES = engines();
const OWN = {
  password: (engine: string) => ENGINES.indexOf(engine),
  bare: ENGINES.length,
  failover: (engine: string) => ENGINES.length + 1 + ENGINES.indexOf(engine),
};
const ownClusters = clustersAhead([
  ...ENGINES.map((): ClusterShape => [3, 0, [], 'clu-pass']),
  [3, 0],
  ...ENGINES.map((): ClusterShape => [3, 1]),
]);

beforeAll(async () => {
  [cluster, single] = await Promise.all([startCluster(3, 1), startRedis()]);
});

afterAll(async () => {
  await Promise.all([cluster?.stop(), single?.stop()]);
});

/** Runs redis-cli with commands on stdin (one reply line each); keys quoted as redis-cli reads them. */
function pipeCli(port: number, lines: string[]): string[] {
  const r = spawnSync('redis-cli', ['-p', String(port)], { input: `${lines.join('\n')}\n`, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-cli failed: ${r.stderr}`);
  return r.stdout.split('\n').slice(0, lines.length);
}

/** Every key under the prefix and its value, on one server. */
function dataset(port: number, prefix = 'bench:key:'): Map<string, string> {
  const keys = spawnSync('redis-cli', ['-p', String(port), '--scan', '--pattern', `${prefix}*`], { encoding: 'utf8' }).stdout.split('\n').filter((k) => k !== '');
  const values = keys.length > 0 ? pipeCli(port, keys.map((k) => `GET ${JSON.stringify(k)}`)) : [];
  return new Map(keys.map((k, i) => [k, values[i]]));
}

/** Slot → primary port, from CLUSTER SLOTS. */
function owners(port: number): Map<number, number> {
  const rows = JSON.parse(spawnSync('redis-cli', ['-p', String(port), '--json', 'CLUSTER', 'SLOTS'], { encoding: 'utf8' }).stdout) as [number, number, [string, number]][];
  const m = new Map<number, number>();
  for (const [first, last, [, p]] of rows) for (let s = first; s <= last; s++) m.set(s, p);
  return m;
}

function flushAll(): void {
  for (const p of cluster.primaries()) spawnSync('redis-cli', ['-p', String(p), 'FLUSHALL']);
  single.cli('FLUSHALL');
}

describe('hash slots', () => {
  it('the shared vectors match the server\'s CLUSTER KEYSLOT, {hashtag} and UTF-8 keys included', () => {
    const vectors = JSON.parse(readFileSync(`${REPO}/test/vectors/slots.json`, 'utf8')) as { slots: [string, number][] };
    const replies = pipeCli(cluster.nodes[0].port, vectors.slots.map(([k]) => `CLUSTER KEYSLOT ${JSON.stringify(k)}`));
    expect(replies.map(Number)).toEqual(vectors.slots.map(([, s]) => s));
    for (const [k, s] of vectors.slots) {
      const b = Buffer.from(k);
      expect(keySlot(b, 0, b.length)).toBe(s);
    }
  });
});

describe.each(ioEngines())('--cluster through the %s engine', (engine) => {
  it('mixed with --verify-get: every request answered, per-primary figures add up, the header says nodes × connections', async () => {
    flushAll();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, '-n', '6000', '-c', '2', '-P', '8', '-r', '3000', '--mode', 'mixed', '--verify-get', '--seed', '7']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/cluster: 3 primaries × 2 connections = 6 sockets/);
    expect(result.requests).toBe(6000);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    expect(result.plan.cluster.nodes).toHaveLength(3);
    expect(result.perNode).toHaveLength(3);
    expect(result.perNode.reduce((n: number, x: any) => n + x.requests, 0)).toBe(6000);
    for (const n of result.perNode) {
      expect(n.requests).toBeGreaterThan(1000);
      expect(n.p99Us).toBeGreaterThan(0);
    }
    expect(result.perNode.map((n: any) => n.node).sort()).toEqual(cluster.primaries().map((p) => `127.0.0.1:${p}`).sort());
  });

  it('set: the dataset equals a single server\'s from the same plan, every key on its slot\'s primary', async () => {
    flushAll();
    const plan = ['--engine', engine, '-n', '3000', '-c', '3', '-P', '16', '-r', '2000', '--mode', 'set', '-d', '8-40', '--seed', '11'];
    const a = await runCli(['--cluster', '-p', String(cluster.nodes[1].port), ...plan]);
    expect(a.code, a.stderr).toBe(0);
    const b = await runCli(['-p', String(single.port), ...plan]);
    expect(b.code, b.stderr).toBe(0);
    const slotOwner = owners(cluster.nodes[0].port);
    const union = new Map<string, string>();
    for (const p of cluster.primaries()) {
      for (const [k, v] of dataset(p)) {
        const kb = Buffer.from(k);
        expect(slotOwner.get(keySlot(kb, 0, kb.length)), k).toBe(p);
        union.set(k, v);
      }
    }
    const expected = dataset(single.port);
    expect(expected.size).toBeGreaterThan(1000);
    expect(union.size).toBe(expected.size);
    expect(new Map([...union].sort())).toEqual(new Map([...expected].sort()));
  });

  it('a weighted mix (80 GET / 20 SET / 5 INCR of another key): the dataset equals a single server\'s, every request sent to its owner at once', async () => {
    flushAll();
    // INCR's key argument has fixed text before the key: its slot is not the GET/SET key's, so routing must use the drawn command's encoder.
    const mix = ['--command', 'GET __key__', '--weight', '80', '--command', 'SET', '--weight', '20', '--command', 'INCR n:__key__', '--weight', '5'];
    const plan = ['--engine', engine, '-n', '4000', '-c', '2', '-P', '16', '-r', '1500', '-d', '8-40', '--seed', '13', ...mix];
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[2].port), ...plan]);
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(4000);
    expect(result.errors).toBe(0);
    // Each request went to its slot's owner first: nothing was redirected.
    expect(result.redirections).toEqual({ moved: 0, ask: 0, tryagain: 0 });
    expect(result.perNode.reduce((n: number, x: any) => n + x.requests, 0)).toBe(4000);
    // The series counts connections (-c), not their sockets to each primary.
    expect(result.series.length).toBeGreaterThan(0);
    for (const s of result.series) expect(s.connections).toBe(2);
    const b = await runCli(['-p', String(single.port), ...plan]);
    expect(b.code, b.stderr).toBe(0);
    const slotOwner = owners(cluster.nodes[0].port);
    const union = new Map<string, string>();
    for (const p of cluster.primaries()) {
      for (const [k, v] of dataset(p, '')) {
        const kb = Buffer.from(k);
        expect(slotOwner.get(keySlot(kb, 0, kb.length)), k).toBe(p);
        union.set(k, v);
      }
    }
    const expected = dataset(single.port, '');
    expect([...expected.keys()].filter((k) => k.startsWith('n:')).length).toBeGreaterThan(50);
    expect(union.size).toBe(expected.size);
    expect(new Map([...union].sort())).toEqual(new Map([...expected].sort()));
  });

  it('MSET/MGET of keys sharing a {tag} in --key-prefix: routed to the tag\'s primary, reads verified key by key (pinned with --cpus on Linux)', async () => {
    flushAll();
    // --cpus with --cluster: the workers pin themselves as without it (the last CPU this process may use).
    const cpus = process.platform === 'linux' ? ['--cpus', (/^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0').trim().split(/[,-]/).pop()!] : [];
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, ...cpus, '-n', '1000', '-c', '2', '-P', '8', '-r', '200', '--seed', '17', '--key-prefix', '{mk}:', '--verify-get',
      '--command', 'MSET __key__ __data__ __key__ __data__', '--command', 'MGET __key__ __key__ __key__', '--weight', '2']);
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(1000);
    expect(result.errors + result.mismatches + result.lostWrites).toBe(0);
    expect(result.redirections).toEqual({ moved: 0, ask: 0, tryagain: 0 });
    const tagOwner = owners(cluster.nodes[0].port).get(keySlot(Buffer.from('mk'), 0, 2));
    expect(result.perNode.find((n: any) => n.node === `127.0.0.1:${tagOwner}`).requests).toBe(1000);
    expect(dataset(tagOwner!, '{mk}:').size).toBeGreaterThan(100);
    if (cpus.length > 0) expect(result.plan.cpus).toEqual([Number(cpus[1])]);
  });

  it('get with --verify-get from the seeds in order: one down, the next (a replica) tells the topology', async () => {
    flushAll();
    const replica = cluster.nodes.find((n) => !cluster.primaries().includes(n.port))!;
    const { run, result } = await runJson(['--cluster', '--cluster-node', '127.0.0.1:1', '--cluster-node', `127.0.0.1:${replica.port}`, '--engine', engine, '-n', '2000', '-r', '1500', '-c', '2', '-P', '4', '--mode', 'get', '--verify-get', '--seed', '3']);
    expect(run.code, run.stderr).toBe(0);
    expect(result.preloadRequests).toBe(1500);
    expect(result.requests).toBe(2000);
    expect(result.misses + result.mismatches + result.errors).toBe(0);
    expect(result.plan.cluster.seeds).toEqual(['127.0.0.1:1', `127.0.0.1:${replica.port}`]);
  });
});

/** Every key on a node, each with the slot CLUSTER KEYSLOT gives it there. */
function keysOf(port: number): string[] {
  return spawnSync('redis-cli', ['-p', String(port), '--scan'], { encoding: 'utf8' }).stdout.split('\n').filter((k) => k !== '');
}

/** The per-node request counts of the first engine's -t run, for the next engine to match. */
const suiteNodes = new Map<string, number[]>();

describe.each(engines())('-t under --cluster (%s engine)', (engine) => {
  // Every test whose keys a cluster must route (PING has none: it is spread over the primaries).
  const tests = 'ping_mbulk,set,get,incr,lpush,lpop,sadd,hset,spop,zadd,lrange_100,mset';

  it.each([
    ['with -r (12-digit keys)', ['-r', '5000']],
    ['without -r (__rand_int__ as written)', []],
  ])('%s: every test completes with 0 errors and no redirection, each key on its slot\'s primary, the keys hash-tagged as redis-benchmark --cluster\'s', async (_what, keyspace) => {
    flushAll();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, '-t', tests, '-n', '1500', '-c', '4', '--seed', '5', ...keyspace]);
    expect(run.code, run.stderr).toBe(0);
    const lines = result as { test: string; result: any }[];
    expect(lines.map((l) => l.test)).toEqual(['ping_mbulk', 'set', 'get', 'incr', 'lpush', 'lpop', 'sadd', 'hset', 'spop', 'zadd', 'lpush_fill', 'lrange_100', 'mset']);
    for (const { test, result: r } of lines) {
      expect([test, r.requests, r.errors, r.failure], JSON.stringify(r.firstError)).toEqual([test, 1500, 0, null]);
      expect(r.redirections, test).toEqual({ moved: 0, ask: 0, tryagain: 0 });
      // Spread over the three primaries as redis-benchmark's clients are (a share each, none idle).
      expect(r.perNode.map((n: any) => n.requests).every((n: number) => n > 200), `${test}: ${JSON.stringify(r.perNode)}`).toBe(true);
    }
    const slotOwner = owners(cluster.nodes[0].port);
    const seen = new Set<string>();
    for (const p of cluster.primaries()) {
      const keys = keysOf(p);
      expect(keys.length, `keys on ${p}`).toBeGreaterThan(100);
      for (const k of keys) {
        const kb = Buffer.from(k);
        expect(slotOwner.get(keySlot(kb, 0, kb.length)), k).toBe(p);
        const shape = /^(key|counter|mylist|myset|myhash|myzset):\{(\d+)\}(:(\d{12}|__rand_int__))?$/.exec(k);
        expect(shape, k).not.toBeNull();
        seen.add(shape![1]);
      }
    }
    expect([...seen].sort()).toEqual(['counter', 'key', 'myhash', 'mylist', 'myset', 'myzset']);
    // Both engines split each test the same way over the primaries (the same draws, the same slots).
    const nodes = lines.flatMap((l) => l.result.perNode.map((n: any) => n.requests));
    const label = keyspace.join(' ');
    if (!suiteNodes.has(label)) suiteNodes.set(label, nodes);
    else expect(nodes).toEqual(suiteNodes.get(label));
  });

  it('the header says the keys are hash-tagged; -q prints redis-benchmark\'s lines', async () => {
    const r = await runCli(['--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, '-t', 'set,mset', '-n', '500', '-r', '1000', '-q']);
    expect(r.code, r.stderr).toBe(0);
    // -q: stdout is redis-benchmark's lines only; the header and its notes on stderr.
    expect(r.stderr).toMatch(/ · cluster: 3 primaries × 50 connections = 150 sockets /);
    expect(r.stderr).toMatch(/under --cluster each key holds a hash tag, key:\{n\}:… and mylist:\{n\}, n a draw from \[0, 1000\)/);
    expect(r.stderr).toMatch(/lists and sets are one per tag \(a list holds about \d+ elements, -n \/ -r, so LRANGE reads no more\)/);
    expect(r.stdout.trim().split('\n').every((l) => /^[^:]+: [\d.]+ requests per second, p50=[\d.]+ msec$/.test(l)), r.stdout).toBe(true);
    expect(r.stdout).toMatch(/^SET: [\d.]+ requests per second, p50=[\d.]+ msec$/m);
    expect(r.stdout).toMatch(/^MSET \(10 keys\): [\d.]+ requests per second, p50=[\d.]+ msec$/m);
  });
});

/** --rate under --cluster: the per-node counts of the first engine's counted run, for the next engine to match. */
const sameRatedNodes: number[] = [];

describe.each(ioEngines())('--cluster with --rate (%s engine)', (engine) => {
  it('mixed --verify-get at 3000/s for 1.5 s: about that rate, per-node requests add up, latency from the intended send, nothing lost', async () => {
    flushAll();
    const rate = 3000;
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, '--rate', String(rate), '--duration', '1500ms', '-c', '2', '-P', '8', '-r', '2000', '--mode', 'mixed', '--verify-get', '--seed', '8'], 30_000);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/cluster: 3 primaries × 2 connections = 6 sockets/);
    // The total rate, as without --cluster (margins for a busy 2-core machine).
    expect(result.opsPerSec).toBeGreaterThan(rate * 0.85);
    expect(result.opsPerSec).toBeLessThan(rate * 1.05);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    expect(result.perNode.reduce((n: number, x: any) => n + x.requests, 0)).toBe(result.requests);
    for (const n of result.perNode) expect(n.requests).toBeGreaterThan(result.requests * 0.15);
    // Open loop: each request's latency from when it was due, the service time and how late it went out beside it.
    const lagged = result.scheduleLagHistogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0);
    expect(lagged).toBe(result.requests);
    expect(result.serviceUs).not.toBeNull();
    expect(result.clientLag.scheduleLagUs).not.toBeNull();
    expect(result.latencyUs.p99).toBeGreaterThanOrEqual(result.serviceUs.p99);
  });

  it('a counted set run at --rate: each request to the primary it goes to without --rate, the same keys and values; same per-node counts in both engines', async () => {
    const plan = ['--engine', engine, '-n', '2000', '-c', '2', '-P', '4', '-r', '1500', '--mode', 'set', '-d', '8-40', '--seed', '19'];
    flushAll();
    const closed = await runJson(['--cluster', '-p', String(cluster.nodes[1].port), ...plan]);
    expect(closed.run.code, closed.run.stderr).toBe(0);
    const union = () => {
      const m = new Map<string, string>();
      for (const p of cluster.primaries()) for (const [k, v] of dataset(p)) m.set(`${p} ${k}`, v);
      return new Map([...m].sort());
    };
    const expected = union();
    flushAll();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[1].port), ...plan, '--rate', '5000'], 30_000);
    expect(run.code, run.stderr).toBe(0);
    expect(result.requests).toBe(2000);
    expect(result.errors).toBe(0);
    // 2000 requests at 5000/s take about 0.4 s: paced, not closed loop.
    expect(result.elapsedSec).toBeGreaterThan(0.3);
    const counts = result.perNode.map((n: any) => n.requests);
    expect(counts).toEqual(closed.result.perNode.map((n: any) => n.requests));
    expect(expected.size).toBeGreaterThan(500);
    expect(union()).toEqual(expected);
    if (sameRatedNodes.length > 0) expect(counts).toEqual(sameRatedNodes);
    else sameRatedNodes.push(...counts);
  });

  // The redis_cluster target's own start and stop are tested below; here the study's search path (runCapacity,
  // the CLI's, the same for both engines) is what is new: one engine is enough, so the test is declared once.
  if (engine === 'js') it('a capacity study (mode: capacity) against a cluster: the search finds the topology once and paces through --cluster', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cluster-capacity-'));
    const file = path.join(dir, 'study.yaml');
    writeFileSync(
      file,
      ['name: cluster_capacity', 'mode: capacity', "slo: 'p99<=200ms'", 'start-rate: 20000', 'step-duration: 1s', 'precision: 50%', 'rounds: 1', 'modes: [set]',
        'defaults: { cluster: true, connections: 1, pipeline: 1, keyspace: 1000, warmup: 100ms }', 'scenarios:', `  - { name: c3, target: { address: '127.0.0.1:${cluster.nodes[0].port}' } }`, ''].join('\n'),
    );
    const out = path.join(dir, 'out');
    const run = await runCli(['study', file, '--out', out, '-q', '--engine', engine], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(path.join(out, readdirSync(out).find((f) => f.includes('_summary_'))!), 'utf8');
    // One round, not failed, a capacity found.
    expect(summary).toMatch(/c3,c3,,set,1,0,[1-9]\d*,/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('capacity --cluster: a short search (1 s steps, p99<=200ms, --precision 50%) converges and prints the table', async () => {
    const run = await runCli(['capacity', '--cluster', '-p', String(cluster.nodes[0].port), '--engine', engine, '--slo', 'p99<=200ms', '--mode', 'set', '-c', '1', '-P', '1', '-r', '1000',
      '--start-rate', '20000', '--step-duration', '1s', '--warmup', '100ms', '--precision', '50%', '--json'], 60_000);
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(run.stdout);
    const table = r.steps.map((s: any) => `${s.targetRate}/s: achieved ${s.achievedRate}, p99 ${s.latencyUs.p99} us, ${s.met ? 'met' : 'failed'}`).join('; ');
    expect(r.end, table).toBe('converged');
    expect(r.capacity, table).toBeGreaterThan(0);
    expect(r.plan.cluster.nodes).toHaveLength(3);
    expect(run.stderr).toMatch(/^respbench capacity · engine \w+ · target 127\.0\.0\.1:\d+ · cluster: 3 primaries × 1 connection = 3 sockets/);
    expect(run.stderr).toMatch(/^step +target\/s +achieved\/s/m);
    expect(run.stderr.match(/^ +\d+ +\d+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+ +(yes|no)/gm)).toHaveLength(r.steps.length);
    expect(run.stderr).toMatch(/^capacity: \d+ ops\/s with p99 <= 200 ms/m);
  });
});

/** Waits until `ok()` holds, polling; fails after `ms`. */
async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function redis(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' });
  return r.stdout.trim();
}

/**
 * Gives `slot` from `from` to `to` at once (no MIGRATING/IMPORTING, so the
 * slot must hold no key): the new owner, the old one, then the other
 * primaries. The new owner's config epoch is bumped first: SETSLOT NODE alone
 * bumps nothing, and a heartbeat the old owner sent before it gave the slot
 * away, if its epoch is the higher, hands the slot back to it on every node
 * that hears it (then both answer MOVED to the other, for good).
 */
function giveSlotAtOnce(slot: number, from: number, to: number): void {
  const toId = redis(to, 'CLUSTER', 'MYID');
  expect(redis(to, 'CLUSTER', 'BUMPEPOCH')).toMatch(/^(BUMPED|STILL) \d+$/);
  for (const p of [to, from, ...cluster.primaries().filter((x) => x !== to && x !== from)]) expect(redis(p, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)).toBe('OK');
}

/** A counter from INFO (e.g. cmdstat_asking's calls), 0 when absent. */
function commandCalls(port: number, command: string): number {
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(redis(port, 'INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

/** --read-from: the per-node counts of the first engine's run, for the next engine to match. */
const sameNodes: number[] = [];
const sameMixNodes: number[] = [];

describe.each(engines())('--read-from through the %s engine', (engine) => {
  /** GETs and SETs each node served since its stats were reset, primaries and replicas apart. */
  function served(): { primaries: { get: number; set: number }[]; replicas: { get: number }[] } {
    const primaries = cluster.primaries();
    return {
      primaries: primaries.map((p) => ({ get: commandCalls(p, 'get'), set: commandCalls(p, 'set') })),
      replicas: cluster.nodes.filter((n) => !primaries.includes(n.port)).map((n) => ({ get: commandCalls(n.port, 'get') })),
    };
  }
  const resetStats = () => {
    for (const n of cluster.nodes) redis(n.port, 'CONFIG', 'RESETSTAT');
  };

  it('replica, mixed --verify-get: every GET on a replica (READONLY), every SET on a primary; stale reads apart, never a mismatch', async () => {
    flushAll();
    resetStats();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--read-from', 'replica', '--engine', engine, '-n', '6000', '-c', '2', '-P', '8', '-r', '3000', '--mode', 'mixed', '--verify-get', '--seed', '7']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/cluster: 3 primaries × 2 connections = 6 sockets \+ 6 READONLY to replicas \(--read-from replica\)/);
    expect(result.requests).toBe(6000);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    expect(result.staleReads).toBeGreaterThanOrEqual(0);
    expect(result.plan.cluster.readFrom).toBe('replica');
    expect(result.plan.cluster.replicas.map((r: unknown[]) => r.length)).toEqual([1, 1, 1]);
    const s = served();
    expect(s.primaries.map((p) => p.get)).toEqual([0, 0, 0]);
    expect(s.primaries.reduce((n, p) => n + p.set, 0)).toBe(result.sets);
    for (const r of s.replicas) expect(r.get).toBeGreaterThan(200);
    expect(s.replicas.reduce((n, r) => n + r.get, 0)).toBe(result.gets);
    // Per shard: the replica's reads count in its primary's row.
    expect(result.perNode.reduce((n: number, x: any) => n + x.requests, 0)).toBe(6000);
    // Both engines send the same requests to the same nodes.
    const counts = [...s.primaries.map((p) => p.set), ...s.replicas.map((r) => r.get)];
    if (sameNodes.length > 0) expect(counts).toEqual(sameNodes);
    else sameNodes.push(...counts);
  });

  it('any, get --verify-get after the preload: connection 0 reads primaries, connection 1 replicas; passes or counts stale reads apart', async () => {
    flushAll();
    resetStats();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--read-from', 'any', '--engine', engine, '-n', '3000', '-c', '2', '-P', '4', '-r', '1500', '--mode', 'get', '--verify-get', '--seed', '5']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/= 6 sockets \+ 3 READONLY to replicas \(--read-from any\)/);
    expect(result.requests).toBe(3000);
    expect(result.mismatches + result.errors).toBe(0);
    expect(result.misses).toBe(0);
    const s = served();
    const onPrimaries = s.primaries.reduce((n, p) => n + p.get, 0);
    const onReplicas = s.replicas.reduce((n, r) => n + r.get, 0);
    expect(onPrimaries + onReplicas).toBe(3000);
    expect(onPrimaries).toBeGreaterThan(500);
    expect(onReplicas).toBeGreaterThan(500);
  });

  it('replica with a --command mix: the read commands (GET) on replicas, the rest (SET, INCR) on primaries; same nodes in both engines', async () => {
    flushAll();
    resetStats();
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[0].port), '--read-from', 'replica', '--engine', engine, '-n', '3000', '-c', '2', '-P', '8', '-r', '1000', '--seed', '3',
      '--command', 'SET __key__ __data__', '--weight', '2', '--command', 'GET __key__', '--weight', '3', '--command', 'INCR n:__key__', '--weight', '1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/= 6 sockets \+ 6 READONLY to replicas \(--read-from replica\)/);
    expect(result.requests).toBe(3000);
    expect(result.errors).toBe(0);
    const primaries = cluster.primaries();
    const replicas = cluster.nodes.filter((n) => !primaries.includes(n.port)).map((n) => n.port);
    const sum = (ports: number[], cmd: string) => ports.reduce((n, p) => n + commandCalls(p, cmd), 0);
    expect(sum(primaries, 'get')).toBe(0);
    expect(sum(primaries, 'set') + sum(primaries, 'incr') + sum(replicas, 'get')).toBe(3000);
    expect(sum(replicas, 'get')).toBeGreaterThan(1000);
    const counts = [...primaries.map((p) => commandCalls(p, 'set') + commandCalls(p, 'incr')), ...replicas.map((p) => commandCalls(p, 'get'))];
    if (sameMixNodes.length > 0) expect(counts).toEqual(sameMixNodes);
    else sameMixNodes.push(...counts);
  });

  it('--read-from without --cluster, or with a value other than primary|replica|any, is a usage error', async () => {
    const bad = await runCli(['--cluster', '-p', String(cluster.nodes[0].port), '--read-from', 'nearest', '-n', '10', '--engine', engine]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--read-from must be primary, replica or any/);
    const alone = await runCli(['-p', String(single.port), '--read-from', 'replica', '-n', '10', '--engine', engine]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--read-from goes with --cluster/);
  });
});

describe.each(engines())('topology changes during a --cluster run (%s engine)', (engine) => {
  it('a failover (CLUSTER FAILOVER on a replica): the run finishes, MOVED counted, no acknowledged write lost', async () => {
    flushAll();
    await cluster.waitOk();
    const slotOwner = owners(cluster.nodes[0].port);
    // All keys in one slot ({fo}), so every request sees the failover.
    const tag = Buffer.from('fo');
    const primary = slotOwner.get(keySlot(tag, 0, tag.length))!;
    const replica = cluster.nodes.find((n) => redis(n.port, 'ROLE').split('\n')[0] === 'slave' && redis(n.port, 'ROLE').split('\n')[2] === String(primary))!;
    expect(replica).toBeDefined();
    const running = runJson(['--cluster', '-p', String(primary), '--engine', engine, '--duration', '3s', '-c', '2', '-P', '4', '-r', '500', '--key-prefix', '{fo}:', '--mode', 'mixed', '--verify-get', '--seed', '5', '--timeout', '5s'], 30_000);
    await until('load on the primary', () => Number(redis(primary, 'DBSIZE')) > 50);
    expect(redis(replica.port, 'CLUSTER', 'FAILOVER')).toBe('OK');
    await until('the replica to take over', () => redis(replica.port, 'ROLE').startsWith('master'));
    const { run, result } = await running;
    expect(run.code, `${run.stderr} first error: ${result.firstError}`).toBe(0);
    expect(result.redirections.moved).toBeGreaterThan(0);
    // A MOVED moves the slot for the connection: the requests in flight then (-P 4 on each of -c 2) get one, the later ones go straight.
    expect(result.redirections.moved).toBeLessThanOrEqual(32);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    expect(result.perNode.find((n: any) => n.node === `127.0.0.1:${primary}`).redirections).toBeGreaterThan(0);
    await cluster.waitOk();
  });

  it('resharding (a slot MIGRATING/IMPORTING, its keys MIGRATEd, then given away): ASK and MOVED counted, nothing lost', async () => {
    flushAll();
    await cluster.waitOk();
    const tag = Buffer.from('rs');
    const slot = keySlot(tag, 0, tag.length);
    const source = owners(cluster.primaries()[0]).get(slot)!;
    const dest = cluster.primaries().find((p) => p !== source)!;
    const sourceId = redis(source, 'CLUSTER', 'MYID');
    const destId = redis(dest, 'CLUSTER', 'MYID');
    const asking = commandCalls(dest, 'asking');
    const running = runJson(['--cluster', '-p', String(source), '--engine', engine, '--duration', '3s', '-c', '2', '-P', '4', '-r', '300', '--key-prefix', '{rs}:', '--mode', 'mixed', '--verify-get', '--seed', '9', '--timeout', '5s'], 30_000);
    await until('load on the source', () => Number(redis(source, 'DBSIZE')) > 50);
    expect(redis(dest, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId)).toBe('OK');
    expect(redis(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', destId)).toBe('OK');
    for (let round = 0; round < 5; round++) {
      const keys = redis(source, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '1000').split('\n').filter((k) => k !== '');
      if (keys.length > 0) redis(source, 'MIGRATE', '127.0.0.1', String(dest), '', '0', '5000', 'REPLACE', 'KEYS', ...keys);
    }
    // Keys no longer on the source: it answers ASK, and the run sends ASKING to the destination.
    await until('ASKING on the destination', () => commandCalls(dest, 'asking') > asking + 10);
    const keys = redis(source, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '1000').split('\n').filter((k) => k !== '');
    if (keys.length > 0) redis(source, 'MIGRATE', '127.0.0.1', String(dest), '', '0', '5000', 'REPLACE', 'KEYS', ...keys);
    // The destination first, then the source, then the rest (the order redis-cli --cluster reshard uses).
    for (const p of [dest, source, ...cluster.primaries().filter((x) => x !== dest && x !== source)]) redis(p, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', destId);
    const { run, result } = await running;
    expect(run.code, `${run.stderr} first error: ${result.firstError}`).toBe(0);
    expect(result.redirections.ask).toBeGreaterThan(0);
    expect(result.redirections.moved).toBeGreaterThan(0);
    expect(result.redirections.moved).toBeLessThanOrEqual(32);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    await cluster.waitOk();
  });

  // Closed loop, and --rate (whose requests of a node drawn before they are due wait, held, and may find their slot moved meanwhile).
  it.for([
    { loop: 'closed loop', paced: [] as string[] },
    { loop: '--rate 4000', paced: ['--rate', '4000'] },
  ])('a slot moved mid-run ($loop): its requests then go straight to the new owner (MOVED about once per connection, not per request), nothing lost, the dataset exact', async ({ paced }) => {
    flushAll();
    await cluster.waitOk();
    const tag = Buffer.from('mv');
    const slot = keySlot(tag, 0, tag.length);
    const source = owners(cluster.primaries()[0]).get(slot)!;
    const dest = cluster.primaries().find((p) => p !== source)!;
    const sourceId = redis(source, 'CLUSTER', 'MYID');
    const destId = redis(dest, 'CLUSTER', 'MYID');
    // 100 keys: a run slowed to ~1,200 ops/s by a busy machine still writes every one (at 300, 2,357-3,654 requests left 1-6 unwritten).
    const plan = ['--engine', engine, '-c', '2', '-P', '4', '-r', '100', '--key-prefix', '{mv}:', '--mode', 'mixed', '--verify-get', '--seed', '13', '--timeout', '5s'];
    const running = runJson(['--cluster', '-p', String(source), '--duration', '2s', ...plan, ...paced], 30_000);
    await until('load on the source', () => Number(redis(source, 'DBSIZE')) > 50);
    // The whole move at once, as redis-cli --cluster reshard does it.
    expect(redis(dest, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', sourceId)).toBe('OK');
    expect(redis(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', destId)).toBe('OK');
    for (let round = 0; round < 3; round++) {
      const keys = redis(source, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '1000').split('\n').filter((k) => k !== '');
      if (keys.length > 0) redis(source, 'MIGRATE', '127.0.0.1', String(dest), '', '0', '5000', 'REPLACE', 'KEYS', ...keys);
    }
    for (const p of [dest, source, ...cluster.primaries().filter((x) => x !== dest && x !== source)]) redis(p, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', destId);
    const { run, result } = await running;
    expect(run.code, `${run.stderr} first error: ${result.firstError}`).toBe(0);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    // Only the requests in flight when the slot moved (-P 4 on each of -c 2) were answered MOVED; before, every later one was.
    expect(result.redirections.moved).toBeGreaterThan(0);
    expect(result.redirections.moved).toBeLessThanOrEqual(16);
    if (paced.length > 0) expect(result.opsPerSec).toBeGreaterThan(0.7 * 4000);
    // The replies of the new owner count in its row.
    expect(result.perNode.find((n: any) => n.node === `127.0.0.1:${dest}`).requests).toBeGreaterThan(0);
    // Every key on the new owner, and the dataset a single server gets from the same plan (long enough to write all 100 keys).
    expect(dataset(source, '{mv}:').size).toBe(0);
    const union = dataset(dest, '{mv}:');
    single.cli('FLUSHALL');
    const b = await runCli(['-p', String(single.port), '-n', '20000', ...plan]);
    expect(b.code, b.stderr).toBe(0);
    const expected = dataset(single.port, '{mv}:');
    expect(expected.size).toBe(100);
    expect(new Map([...union].sort()), `cluster run: ${result.requests} requests, ${result.ok} ok`).toEqual(new Map([...expected].sort()));
    await cluster.waitOk();
  });
  it('a node reached only through a redirection drops its connections under --reconnect: its Links open again and the run goes on to its end; what was in flight on them counts as lost', async () => {
    flushAll();
    await cluster.waitOk();
    const tag = Buffer.from('dk');
    const slot = keySlot(tag, 0, tag.length);
    const source = owners(cluster.primaries()[0]).get(slot)!;
    const dest = cluster.primaries().find((p) => p !== source)!;
    const gets = commandCalls(dest, 'get');
    const before = commandCalls(source, 'get');
    const started = Date.now();
    const running = runJson(['--cluster', '-p', String(source), '--engine', engine, '--duration', '6s', '-c', '2', '-P', '4', '-r', '300', '--key-prefix', '{dk}:', '--mode', 'get', '--no-preload', '--timeout', '5s', '--reconnect', '--reconnect-backoff', '100ms'], 40_000);
    // Reads only (no key is written), so the slot can be given away at once: SETSLOT NODE refuses while the source holds keys of it.
    await until('load on the source', () => commandCalls(source, 'get') > before + 50);
    giveSlotAtOnce(slot, source, dest);
    // The slot's requests now go straight to the destination, over Links redirections opened (its own sockets carry none of them).
    await until('GETs on the destination', () => commandCalls(dest, 'get') > gets + 20);
    redis(dest, 'CLIENT', 'KILL', 'TYPE', 'normal');
    const killed = commandCalls(dest, 'get');
    const { run, result } = await running;
    expect(result.failure, `${run.stderr} ${JSON.stringify(result.failure)}`).toBeNull();
    expect(run.code, run.stderr).toBe(0);
    // The run went on to its end, and the destination was asked again after the kill.
    expect(Date.now() - started).toBeGreaterThan(6_000);
    expect(commandCalls(dest, 'get')).toBeGreaterThan(killed + 20);
    expect(result.lost).toBeGreaterThanOrEqual(0);
    expect(result.lost).toBeLessThanOrEqual(2 * 4 * 3);
    giveSlotAtOnce(slot, dest, source);
    await cluster.waitOk();
  });
});

describe('a cluster that requires a password', () => {
  it.each(engines())('the handshake runs on every node (%s engine): AUTH with -a, and a clear line without it', async (engine) => {
    const own = await ownClusters.take(OWN.password(engine));
    try {
      const { run, result } = await runJson(['--cluster', '-p', String(own.nodes[0].port), '-a', 'clu-pass', '--engine', engine, '-n', '3000', '-c', '2', '-P', '8', '-r', '1000', '--mode', 'mixed', '--verify-get', '--seed', '4']);
      expect(run.code, run.stderr).toBe(0);
      expect(result.perNode.every((n: any) => n.requests > 0)).toBe(true);
      expect(JSON.stringify(result)).not.toContain('clu-pass');
      // The same seed and password as one URI: redis+cluster:// is --cluster.
      const viaUri = await runJson(['-u', `redis+cluster://clu-pass@127.0.0.1:${own.nodes[0].port}`, '--engine', engine, '-n', '2000', '-c', '1', '-P', '8', '-r', '1000', '--mode', 'mixed', '--verify-get']);
      expect(viaUri.run.code, viaUri.run.stderr).toBe(0);
      expect(viaUri.result.perNode).toHaveLength(3);
      expect(viaUri.run.stderr + viaUri.run.stdout).not.toContain('clu-pass');
      const bare = await runCli(['--cluster', '-p', String(own.nodes[0].port), '--engine', engine, '-n', '10']);
      expect(bare.code).toBe(1);
      expect(bare.stderr).toMatch(/requires a password.*-a\/--pass/);
    } finally {
      await own.stop();
    }
  });
});

describe('--cluster refusals and failures', () => {
  it('no seed answers: exit 1 naming each seed', async () => {
    const r = await runCli(['--cluster', '--cluster-node', '127.0.0.1:1', '--cluster-node', '127.0.0.1:2', '-n', '10']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/no seed node told the topology.*127\.0\.0\.1:1.*127\.0\.0\.1:2/);
  });

  it.each(engines())('a cluster node reached without --cluster (%s): the MOVED replies counted as errors, exit 3, and one hint to add --cluster', async (engine) => {
    const r = await runCli(['--engine', engine, '-p', String(cluster.nodes[0].port), '-n', '300', '-r', '1000', '--mode', 'set']);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/ERROR REPLIES: \d+, first: "?MOVED \d+ /);
    const hints = r.stdout.split('\n').filter((l) => l.startsWith('hint: '));
    expect(hints).toEqual([`hint: the server is a Redis Cluster node (it answered MOVED): add --cluster to send each key to the node that owns its slot`]);
  });

  it('a server not in cluster mode: exit 1 saying so', async () => {
    const r = await runCli(['--cluster', '-p', String(single.port), '-n', '10']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not in cluster mode.*leave out --cluster/);
  });

  it('a mix command or --multi-key-get whose keys would span slots, and --ramp-connections: usage errors, exit 2', async () => {
    const seed = ['--cluster', '-p', String(cluster.nodes[0].port), '-n', '10'];
    const mix = await runCli([...seed, '--command', 'GET', '--command', 'MGET __key__ __key__']);
    expect(mix.code).toBe(2);
    expect(mix.stderr).toMatch(/--command 2: under --cluster .*\{tag\} in --key-prefix/);
    const mget = await runCli([...seed, '--mode', 'get', '--multi-key-get', '3']);
    expect(mget.code).toBe(2);
    expect(mget.stderr).toMatch(/--multi-key-get: under --cluster .*\{tag\} in --key-prefix/);
    // The fixed text before the key (here a {tag} in the prefix that the template's text closes differently) must hold one whole tag.
    const half = await runCli([...seed, '--key-prefix', '{a', '--command', 'MGET }__key__ __key__']);
    expect(half.code).toBe(2);
    const ramp = await runCli(['--cluster', '-p', String(cluster.nodes[0].port), '--duration', '1s', '-c', '4', '--ramp-connections', '2:2:1s']);
    expect(ramp.code).toBe(2);
    expect(ramp.stderr).toMatch(/--cluster does not go with --ramp-connections/);
    expect(ramp.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('--read-from replica against a cluster whose primaries have no replica: exit 2, one line naming the flag', async () => {
    const bare = await ownClusters.take(OWN.bare);
    try {
      const r = await runCli(['--cluster', '-p', String(bare.nodes[0].port), '--read-from', 'replica', '-n', '10']);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/--read-from replica: primary 127\.0\.0\.1:\d+ has no replica to read from/);
      // any: reads stay on the primaries that have no replica.
      const any = await runJson(['--cluster', '-p', String(bare.nodes[0].port), '--read-from', 'any', '-n', '300', '--mode', 'mixed', '--verify-get']);
      expect(any.run.code, any.run.stderr).toBe(0);
      expect(any.result.mismatches + any.result.lostWrites + any.result.staleReads).toBe(0);
    } finally {
      await bare.stop();
    }
  });

  it('-t with --compare, and a command on the line, under --cluster: usage errors, exit 2, one line', async () => {
    const seed = ['--cluster', '-p', String(cluster.nodes[0].port), '-n', '10'];
    for (const [args, text] of [
      [['-t', 'set', '--compare', `127.0.0.1:${single.port}`], /^respbench: --compare does not go with --cluster \(the second target would need a cluster discovery of its own/],
      [['SET', 'foo', 'bar'], /^respbench: --cluster does not go with a command on the line/],
    ] as [string[], RegExp][]) {
      const r = await runCli([...seed, ...args]);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(text);
    }
  });

  it('a command whose keys would span slots is a usage error naming {tag}', async () => {
    const r = await runCli(['--cluster', '-p', String(cluster.nodes[0].port), '--mode', 'set', '--set-cmd', 'MSET a:__key__ __data__ b:__key__ __data__', '-n', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\{tag\}/);
  });
});

describe('the redis_cluster study target', () => {
  // Compared by pid, not by count: other clusters (this file's own, another file's) may start or stop meanwhile.

  function studyFile(): { file: string; out: string } {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cluster-study-'));
    const file = path.join(dir, 'study.yaml');
    writeFileSync(
      file,
      ['name: cluster_study', 'rounds: 1', 'modes: [set, get]', 'defaults: { requests: 4000, pipeline: 8, keyspace: 2000, verifyGet: true }', 'groups:', '  - title: cluster', '    scenarios:', '      - name: c3', '        target:', '          redis_cluster: { primaries: 3, replicas: 1, persistence: aof_everysec }', ''].join('\n'),
    );
    return { file, out: path.join(dir, 'out') };
  }

  it('starts a 3 × 2 cluster, runs set and get through --cluster, stops every node', async () => {
    const before = clusterNodePids();
    const { file, out } = studyFile();
    const run = await runCli(['study', file, '--out', out, '-q', '--engine', 'js'], 90_000);
    expect(run.code, run.stderr).toBe(0);
    const summary = readFileSync(path.join(out, readdirSync(out).find((f) => f.includes('_summary_'))!), 'utf8');
    expect(summary).toMatch(/cluster,c3,c3,,set,1,0,/);
    expect(summary).toMatch(/cluster,c3,c3,,get,1,0,/);
    expect(newClusterNodes(before)).toEqual([]);
    rmSync(path.dirname(file), { recursive: true, force: true });
  });

  it('a running cluster as a target (cluster: true, redis+cluster://): measured through --cluster, the detail CSV records the topology found', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cluster-seed-'));
    const file = path.join(dir, 'study.yaml');
    const seed = cluster.nodes[0].port;
    writeFileSync(
      file,
      ['name: seeds', 'rounds: 1', 'modes: [set]', 'defaults: { requests: 2000, pipeline: 8, keyspace: 1000 }', 'groups:', '  - title: g', '    scenarios:', `      - { name: a, target: { address: '127.0.0.1:${seed}', cluster: true } }`, `      - { name: b, target: { uri: 'redis+cluster://127.0.0.1:${seed}' } }`, ''].join('\n'),
    );
    try {
      const run = await runCli(['study', file, '--out', path.join(dir, 'out'), '-q'], 60_000);
      expect(run.code, run.stderr).toBe(0);
      const name = readdirSync(path.join(dir, 'out')).find((f) => f.includes('_detail_'))!;
      const rows: Record<string, string>[] = parseCsv(readFileSync(path.join(dir, 'out', name), 'utf8'), { columns: true });
      expect(rows.map((r) => [r.scenario, r.target, r.status, r.errors])).toEqual([
        ['a', `cluster seed 127.0.0.1:${seed}`, 'ok', '0'],
        ['b', `cluster seed 127.0.0.1:${seed}`, 'ok', '0'],
      ]);
      for (const r of rows) expect(JSON.parse(r.cluster).nodes.map((n: { port: number }) => n.port).sort()).toEqual([...cluster.primaries()].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('interrupted while it runs: every node stopped', async () => {
    const before = clusterNodePids();
    const { file, out } = studyFile();
    const child = spawn(process.execPath, [CLI, 'study', file, '--out', out, '-q', '--duration', '20s'], { stdio: 'ignore' });
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    await until('the cluster to start', () => newClusterNodes(before).length >= 6, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    await until('every node to stop', () => newClusterNodes(before).length === 0, 15_000);
    rmSync(path.dirname(file), { recursive: true, force: true });
  });
});

describe('a node lost during a --cluster run', () => {
  it.each(engines())('killed with --reconnect (%s engine): the run goes on after the failover, MOVED counted', async (engine) => {
    // A cluster of its own: a failover per engine, each with a replica to fail over to.
    const own = await ownClusters.take(OWN.failover(engine));
    try {
      const victim = own.primaries()[0];
      const slotOwner = owners(victim);
      let tag = '';
      for (let i = 0; tag === ''; i++) {
        const b = Buffer.from(`kr${i}`);
        if (slotOwner.get(keySlot(b, 0, b.length)) === victim) tag = `kr${i}`;
      }
      const node = own.nodes.find((n) => n.port === victim)!;
      const seed = own.primaries().find((p) => p !== victim)!;
      // Its replica in sync (a replica that never synced does not fail over).
      await until('the replica in sync', () =>
        own.nodes.some((n) => {
          const info = redis(n.port, 'INFO', 'replication');
          return info.includes('role:slave') && info.includes(`master_port:${victim}`) && info.includes('master_link_status:up');
        }),
      );
      const running = runJson(['--cluster', '-p', String(seed), '--engine', engine, '--duration', '5s', '-c', '1', '-P', '4', '-r', '300', '--key-prefix', `{${tag}}:`, '--mode', 'mixed', '--seed', '2', '--timeout', '10s', '--reconnect', '--reconnect-backoff', '100ms', '--reconnect-attempts', '1000'], 40_000);
      await until('load on the node', () => Number(redis(victim, 'DBSIZE')) > 50);
      node.process.kill('SIGKILL');
      const { run, result } = await running;
      expect(result.failure, `${run.stderr} ${JSON.stringify(result.failure)}`).toBeNull();
      expect([0, 3]).toContain(run.code);
      expect(result.reconnects).toBeGreaterThanOrEqual(1);
      expect(result.redirections.moved).toBeGreaterThan(0);
      expect(result.failure, run.stderr).toBeNull();
      // Each redirection in the row of the node that sent it: the rows add up to the totals, and the given-up requests to the errors.
      expectRowsAddUp(result);
    } finally {
      await own.stop();
    }
  });

  it('killed without --reconnect: exit 1, the message names the node', async () => {
    const victim = cluster.primaries()[0];
    const node = cluster.nodes.find((n) => n.port === victim)!;
    const running = runCli(['--cluster', '-p', String(victim), '--duration', '5s', '-c', '1', '-P', '4', '--mode', 'set', '--seed', '1'], 30_000);
    await until('load on the node', () => Number(redis(victim, 'DBSIZE')) > 50);
    node.process.kill('SIGKILL');
    const r = await running;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`127.0.0.1:${victim}`);
  });
});
