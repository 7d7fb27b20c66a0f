/**
 * The cluster rows: a local Redis Cluster of 3 primaries (no replicas) on
 * free loopback ports, started by the project's launcher
 * (packages/cli/src/local-cluster.ts, from the working tree's build); SET
 * and GET at pipeline 16 and at pipeline 1, 16 sockets per primary on every
 * side (redis-benchmark --cluster -c 48, respbench --cluster -c 16, memtier
 * --cluster-mode -c 16), alternating rounds, medians, ratios as the
 * single-server table has them. The cluster is stopped and its files
 * removed afterwards, on an error, and on an interrupt (even one that comes
 * while it is starting).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnNode, startLocalCluster } from '../../packages/cli/dist/local-cluster.js';
import { compareRounds, printComparison } from './compare.mjs';
import { onInterrupt } from './processes.mjs';

async function startCluster(primaries) {
  const nodes = new Set();
  const dirs = [];
  const forget = onInterrupt(() => {
    for (const n of nodes) n.kill();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  try {
    const cluster = await startLocalCluster({
      primaries,
      config: ['--save', '', '--appendonly', 'no'],
      makeDir: () => {
        const d = mkdtempSync(path.join(tmpdir(), 'respbench-perf-cluster-'));
        dirs.push(d);
        return d;
      },
      startNode: (node) => spawnNode(node, (p) => nodes.add(p)),
    });
    return {
      ports: cluster.nodes.map((n) => n.port),
      stop: async () => {
        await cluster.stop();
        forget();
      },
    };
  } catch (err) {
    forget();
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
    await cluster.stop();
  }
}
