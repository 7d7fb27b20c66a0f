/**
 * --cluster over TLS against a real TLS cluster (3 primaries, no replicas,
 * started once for the file by test/helpers/cluster.ts): every node has a TLS
 * port (tls-cluster yes, tls-replication yes, a certificate for
 * localhost/127.0.0.1 made with openssl) next to its plain one, and requires
 * a password. Discovery gives the TLS ports with --tls and the plain ones
 * without; every node's connection (the seed, the primaries, a node an ASK
 * names) is opened with TLS, --cacert, --sni and AUTH; a TLS port reached
 * without --tls is one line and exit 1. Through both engines. And the
 * study's redis_cluster target with tls: true.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keySlot } from '../packages/cli/src/engine-js/slot.js';
import { startCluster, type ClusterTls, type TestCluster } from './helpers/cluster.js';
import { engines } from './helpers/engines.js';
import { clusterNodePids, newClusterNodes, runCli, runJson } from './helpers/servers.js';

const PASS = 'tls-cluster-secret';
let cluster: TestCluster;
let tls: ClusterTls;

beforeAll(async () => {
  cluster = await startCluster(3, 0, [], PASS, true);
  tls = cluster.tls!;
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
});

/** redis-cli on a node's plain port (the password by REDISCLI_AUTH). */
function redis(port: number, ...args: string[]): string {
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', env: { ...process.env, REDISCLI_AUTH: PASS } });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

const flushAll = () => cluster.nodes.forEach((n) => redis(n.port, 'FLUSHALL'));
const sorted = (ports: number[]) => [...ports].sort((a, b) => a - b);
const TLS = () => ['--tls', '--cacert', tls.ca, '-a', PASS];

describe.each(engines())('--cluster over TLS through the %s engine', (engine) => {
  it('mixed --verify-get from a TLS seed with -a: every primary reached on its TLS port, per-node figures add up, the password shown nowhere', async () => {
    flushAll();
    const { run, result } = await runJson(['--cluster', '-p', String(tls.ports[0]), ...TLS(), '--engine', engine, '-n', '6000', '-c', '2', '-P', '8', '-r', '3000', '--mode', 'mixed', '--verify-get', '--seed', '7']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/\(TLS\) · cluster: 3 primaries × 2 connections = 6 sockets/);
    expect(result.failure).toBeNull();
    expect(result.requests).toBe(6000);
    expect(result.mismatches + result.lostWrites + result.errors).toBe(0);
    expect(sorted(result.plan.cluster.nodes.map((n: any) => n.port))).toEqual(sorted(tls.ports));
    expect(result.perNode).toHaveLength(3);
    expect(result.perNode.map((n: any) => n.node).sort()).toEqual(sorted(tls.ports).map((p) => `127.0.0.1:${p}`).sort());
    expect(result.perNode.reduce((n: number, x: any) => n + x.requests, 0)).toBe(6000);
    for (const n of result.perNode) expect(n.requests).toBeGreaterThan(1000);
    expect(result.plan.password).toBe('***');
    expect(run.stdout + run.stderr).not.toContain(PASS);
  });

  it('a slot being migrated: the ASK names the target\'s TLS port, the detour opens with TLS, --sni and AUTH; ASK counted', async () => {
    flushAll();
    const slot = keySlot(Buffer.from('bench:key:0'), 0, 'bench:key:0'.length);
    const owners = JSON.parse(redis(cluster.nodes[0].port, '--json', 'CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const source = owners.find(([first, last]) => first <= slot && slot <= last)![2][1];
    const target = cluster.nodes.map((n) => n.port).find((p) => p !== source)!;
    const id = (port: number) => redis(port, 'CLUSTER', 'MYID');
    redis(target, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', id(source));
    redis(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', id(target));
    try {
      const { run, result } = await runJson(['--cluster', '-p', String(tls.ports[0]), ...TLS(), '--sni', 'localhost', '--engine', engine, '-n', '2000', '-r', '40', '--mode', 'set', '--seed', '3']);
      expect(run.code, run.stderr).toBe(0);
      expect(result.failure).toBeNull();
      expect(result.errors).toBe(0);
      expect(result.sets).toBe(2000);
      expect(result.redirections.ask).toBeGreaterThan(0);
      expect(result.redirections.moved).toBe(0);
      // Written on the target through ASKING: there, not on the source.
      expect(redis(target, 'CLUSTER', 'COUNTKEYSINSLOT', String(slot))).not.toBe('0');
      expect(redis(source, 'CLUSTER', 'COUNTKEYSINSLOT', String(slot))).toBe('0');
    } finally {
      redis(source, 'CLUSTER', 'SETSLOT', String(slot), 'STABLE');
      redis(target, 'CLUSTER', 'SETSLOT', String(slot), 'STABLE');
      flushAll();
    }
  });

  it('without --tls from a plain port of the same cluster: the plain ports', async () => {
    const { run, result } = await runJson(['--cluster', '-p', String(cluster.nodes[1].port), '-a', PASS, '--engine', engine, '-n', '1500', '--mode', 'set', '-q']);
    expect(run.code, run.stderr).toBe(0);
    expect(result.sets).toBe(1500);
    expect(sorted(result.plan.cluster.nodes.map((n: any) => n.port))).toEqual(sorted(cluster.nodes.map((n) => n.port)));
    flushAll();
  });

  it('a TLS port reached without --tls, an untrusted CA, a wrong --sni: one line each, exit 1, no hang', async () => {
    const cases: [string[], RegExp][] = [
      [['-a', PASS], /^respbench: --cluster: no seed node told the topology \(127\.0\.0\.1:\d+: .*closed before any reply: if the cluster's nodes take TLS, add --tls/],
      [['--tls', '--cacert', tls.otherCa, '-a', PASS], /certificate not trusted/],
      [[...TLS(), '--sni', 'elsewhere.example'], /hostname mismatch.*elsewhere\.example/],
    ];
    for (const [extra, want] of cases) {
      const run = await runCli(['--cluster', '-p', String(tls.ports[2]), ...extra, '--engine', engine, '-n', '100', '-q'], 20_000);
      expect(run.code, run.stderr).toBe(1);
      const lines = run.stderr.trim().split('\n');
      expect(lines, run.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(want);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(run.stderr).not.toContain(PASS);
      expect(run.ms).toBeLessThan(10_000);
    }
  });
});

describe('the redis_cluster study target with tls: true', () => {
  const certDirs = () => readdirSync(tmpdir()).filter((f) => /^respbench-study-\d+-cluster-tls-/.test(f));

  it('starts a TLS-only 3-primary cluster, runs set and get --verify-get over TLS through --cluster, stops every node and removes its certificate', async () => {
    const before = clusterNodePids();
    const dirsBefore = certDirs().length;
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cluster-tls-study-'));
    try {
      const file = path.join(dir, 'study.yaml');
      const out = path.join(dir, 'out');
      writeFileSync(
        file,
        ['name: cluster_tls', 'rounds: 1', 'modes: [set, get]', 'defaults: { requests: 3000, pipeline: 8, keyspace: 1000, verifyGet: true }', 'groups:', '  - title: cluster', '    scenarios:', '      - name: c3', '        target:', '          redis_cluster: { primaries: 3, replicas: 0 }', '          tls: true', ''].join('\n'),
      );
      const run = await runCli(['study', file, '--out', out, '-q'], 60_000);
      expect(run.code, run.stderr).toBe(0);
      const summary = readFileSync(path.join(out, readdirSync(out).find((f) => f.includes('_summary_'))!), 'utf8');
      expect(summary).toMatch(/cluster,c3,c3,,set,1,0,/);
      expect(summary).toMatch(/cluster,c3,c3,,get,1,0,/);
      const detail = readFileSync(path.join(out, readdirSync(out).find((f) => f.includes('_detail_'))!), 'utf8');
      expect(detail).toContain('redis cluster 3 primaries × 1 (preset none) (TLS)');
      expect(detail).toMatch(/cacert"+:"+[^"]+ca\.pem/);
      expect(newClusterNodes(before)).toEqual([]);
      expect(certDirs()).toHaveLength(dirsBefore);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
