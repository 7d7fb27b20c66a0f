/**
 * The cluster rows: a local Redis Cluster of 3 primaries (no replicas) on
 * free loopback ports; SET and GET at pipeline 16 and at pipeline 1, 16
 * sockets per primary on every side (redis-benchmark --cluster -c 48,
 * respbench --cluster -c 16, memtier --cluster-mode -c 16), alternating
 * rounds, medians, ratios as the single-server table has them. The cluster
 * is stopped and its files removed afterwards, on an error, and on an
 * interrupt.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compareRounds, printComparison } from './compare.mjs';
import { freePort, onInterrupt, waitPort } from './processes.mjs';

/** A local cluster of `primaries` redis-servers (no replicas), joined and ready; `stop()` ends it and removes its files. */
async function startCluster(primaries) {
  const dirs = [];
  const procs = [];
  const ports = [];
  const stop = () => {
    forget();
    for (const p of procs) p.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  const forget = onInterrupt(stop);
  try {
    for (let i = 0; i < primaries; i++) {
      const p = await freePort();
      const bus = await freePort();
      const d = mkdtempSync(path.join(tmpdir(), 'respbench-perf-cluster-'));
      dirs.push(d);
      ports.push(p);
      procs.push(spawn('redis-server', ['--port', String(p), '--bind', '127.0.0.1', '--dir', d, '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus)], { stdio: 'ignore' }));
    }
    for (const p of ports) await waitPort(p);
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stderr}${create.stdout}`);
    for (let i = 0; ; i++) {
      const ok = ports.every((p) => /cluster_state:ok/.test(spawnSync('redis-cli', ['-p', String(p), 'CLUSTER', 'INFO'], { encoding: 'utf8' }).stdout));
      if (ok) break;
      if (i > 300) throw new Error('the cluster did not reach cluster_state:ok');
      await new Promise((r) => setTimeout(r, 100));
    }
    return { ports, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/** `makeClients(target)` gives the clients for the cluster (the same kinds as for one server; each checks it can run --cluster). */
export async function clusterRows(makeClients, w, rounds, baselineName, onSample) {
  const primaries = 3;
  const perPrimary = 16;
  const cluster = await startCluster(primaries);
  try {
    const target = { port: cluster.ports[0], transport: 'tcp', primaries };
    const clients = await makeClients(target);
    console.log(`cluster: ${primaries} primaries on 127.0.0.1 (seed ${target.port}); ${w.requests} requests, ${perPrimary * primaries} sockets each side, keyspace ${w.keyspace}, ${w.valueSize} B values, ${rounds} rounds (medians)`);
    const shapes = [16, 1].flatMap((pipeline) => ['set', 'get'].map((test) => ({ test, pipeline, connections: perPrimary })));
    const results = await compareRounds(clients, shapes, rounds, onSample);
    printComparison(results, clients, { baselineName });
  } finally {
    cluster.stop();
  }
}
