/**
 * A --cluster run whose topology changes under it: when a MOVED says the map
 * is stale, the engine asks the cluster for the whole map again (CLUSTER
 * SHARDS, else CLUSTER SLOTS) and routes by it, so many slots moved at once
 * cost a few MOVED replies, not one per slot and connection, and a primary
 * that joins mid-run gets its share of the load. Each engine gets a cluster
 * of its own (the join changes it for good).
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clustersAhead, type TestCluster } from './helpers/cluster.js';
import { engines } from './helpers/engines.js';
import { runJson, startRedis, type RedisServer } from './helpers/servers.js';

function redis(port: number, ...args: string[]): string {
  return spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();
}

/** Runs many commands through one redis-cli (one reply line each). */
function pipe(port: number, lines: string[]): string[] {
  const r = spawnSync('redis-cli', ['-p', String(port)], { input: `${lines.join('\n')}\n`, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`redis-cli failed: ${r.stderr}`);
  return r.stdout.split('\n').slice(0, lines.length);
}

async function until(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The slots `port` owns now, from its CLUSTER SLOTS. */
function ownedSlots(port: number): number[] {
  const rows = JSON.parse(redis(port, '--json', 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
  const out: number[] = [];
  for (const [first, last, [, p]] of rows) if (p === port) for (let s = first; s <= last; s++) out.push(s);
  return out;
}

/**
 * Gives `slots` (all `source`'s) to `dest` at once, without migrating their
 * keys: the destination imports and takes them (which bumps its config epoch,
 * so its claim wins), the other primaries are told, and the source learns it
 * from the destination's gossip (dropping its keys of those slots).
 */
function giveSlots(source: number, dest: number, others: number[], slots: number[]): void {
  const sourceId = redis(source, 'CLUSTER', 'MYID');
  const destId = redis(dest, 'CLUSTER', 'MYID');
  expect(pipe(dest, slots.map((s) => `CLUSTER SETSLOT ${s} IMPORTING ${sourceId}`)).every((l) => l === 'OK')).toBe(true);
  expect(pipe(dest, slots.map((s) => `CLUSTER SETSLOT ${s} NODE ${destId}`)).every((l) => l === 'OK')).toBe(true);
  for (const p of others) expect(pipe(p, slots.map((s) => `CLUSTER SETSLOT ${s} NODE ${destId}`)).every((l) => l === 'OK')).toBe(true);
}

/** CLUSTER SHARDS calls a node has answered (INFO commandstats), 0 when none. */
function shardsCalls(port: number): number {
  const m = /cmdstat_cluster\|shards:calls=(\d+)/.exec(redis(port, 'INFO', 'commandstats'));
  return m ? Number(m[1]) : 0;
}

/** How many of `slots` hold keys on `port`. */
function slotsWithKeys(port: number, slots: number[]): number {
  return pipe(port, slots.map((s) => `CLUSTER COUNTKEYSINSLOT ${s}`)).filter((n) => Number(n) > 0).length;
}

const ENGINES = engines();
/** A cluster per engine (the join changes it for good), both started when the first engine's tests take theirs. */
const clusters = clustersAhead(ENGINES.map(() => [3, 0]));

describe.each(ENGINES)('topology refresh mid-run (%s engine)', (engine) => {
  let cluster: TestCluster;
  const joined: RedisServer[] = [];

  beforeAll(async () => {
    cluster = await clusters.take(ENGINES.indexOf(engine));
  });

  afterAll(async () => {
    await Promise.all([cluster?.stop(), ...joined.map((n) => n.stop())]);
  });

  // Paced: the MOVED replies a refresh cannot save are those of the moved slots' requests sent while it is under way, so they grow with the rate; 10000/s keeps them a small share of the slots it writes to in 4 s on a loaded machine.
  const plan = (seconds: number) => ['--engine', engine, '--duration', `${seconds}s`, '--rate', '10000', '-c', '2', '-P', '4', '-r', '1000000', '--mode', 'set', '--seed', '21', '--timeout', '5s'];

  it('2000 slots given to another primary at once: the run ends without an error, and MOVED replies are far fewer than the moved slots it wrote to', async () => {
    await cluster.waitOk();
    const [source, dest, third] = cluster.primaries();
    const before = ownedSlots(source);
    const slots = before.slice(0, 2000);
    expect(slots.length).toBe(2000);
    const asked = () => shardsCalls(source) + shardsCalls(dest) + shardsCalls(third);
    const askedBefore = asked();
    const running = runJson(['--cluster', '-p', String(source), ...plan(4)], 60_000);
    await until('load on the source', () => Number(redis(source, 'DBSIZE')) > 2000);
    giveSlots(source, dest, [third], slots);
    await until('the source to learn it lost the slots', () => ownedSlots(source).length === before.length - 2000);
    const { run, result } = await running;
    expect(run.code, `${run.stderr} first error: ${result.firstError}`).toBe(0);
    expect(result.errors).toBe(0);
    // The destination had no key in those slots before: every one holding keys there now was written by the run after the move.
    const touched = slotsWithKeys(dest, slots);
    expect(touched).toBeGreaterThan(500);
    // Without a refresh each of them would have cost each connection a MOVED (at least `touched`); the refresh rerouted them all at once.
    expect(result.redirections.moved).toBeGreaterThan(0);
    expect(result.redirections.moved, `MOVED replies, ${touched} moved slots written to`).toBeLessThan(0.1 * touched);
    // Discovery asked once; the refresh at least once more, and a storm of MOVED replies did not make a storm of queries (one per 100 ms at most over the 4 s run).
    const queries = asked() - askedBefore;
    expect(queries, 'CLUSTER SHARDS calls during the run').toBeGreaterThanOrEqual(2);
    expect(queries, 'CLUSTER SHARDS calls during the run').toBeLessThanOrEqual(1 + 4000 / 100);
    await cluster.waitOk();
  });

  it('a primary that joins mid-run (CLUSTER MEET, then 1000 slots given to it) gets requests: its own per-node row, non-zero', async () => {
    await cluster.waitOk();
    const [source, ...others] = cluster.primaries();
    const node = await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000']);
    joined.push(node);
    const nodeId = redis(node.port, 'CLUSTER', 'MYID');
    // Longer: the join takes a few gossip rounds before the slots move.
    const running = runJson(['--cluster', '-p', String(source), ...plan(8)], 60_000);
    let ended = false;
    void running.then(() => (ended = true));
    await until('load on the cluster', () => Number(redis(source, 'DBSIZE')) > 2000);
    expect(redis(source, 'CLUSTER', 'MEET', '127.0.0.1', String(node.port))).toBe('OK');
    await until('every node to know the new one', () => cluster.primaries().every((p) => redis(p, 'CLUSTER', 'NODES').includes(nodeId)) && redis(node.port, 'CLUSTER', 'NODES').split('\n').length === 4);
    const slots = ownedSlots(source).slice(0, 1000);
    const before = ownedSlots(source).length;
    giveSlots(source, node.port, others, slots);
    await until('the source to learn it lost the slots', () => ownedSlots(source).length === before - 1000);
    // The move came while the run was still going (else this test shows nothing).
    expect(ended).toBe(false);
    const { run, result } = await running;
    expect(run.code, `${run.stderr} first error: ${result.firstError}`).toBe(0);
    expect(result.errors).toBe(0);
    const row = result.perNode.find((n: { node: string }) => n.node === `127.0.0.1:${node.port}`);
    expect(row, JSON.stringify(result.perNode)).toBeDefined();
    expect(row.requests, JSON.stringify(result.perNode)).toBeGreaterThan(0);
    // Every reply counts in one row: the rows add up to the run's requests.
    expect(result.perNode.reduce((n: number, r: { requests: number }) => n + r.requests, 0)).toBe(result.requests);
    // Its requests were the moved slots' writes: it holds their keys.
    expect(slotsWithKeys(node.port, slots), 'moved slots holding keys on the new node').toBeGreaterThan(0);
  });
});
