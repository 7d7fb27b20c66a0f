/**
 * The one launcher of a local Redis Cluster (packages/cli/src/local-cluster.ts:
 * a study's redis_cluster target, the tests' clusters, `pnpm perf --tests
 * cluster`) on a machine where other processes take ports too: a port free
 * when the launcher chose it can be taken before its node binds it. That node
 * ends, or the port answers for another process; the launcher starts the
 * node again on other ports instead of failing the whole cluster (or, worse,
 * building it with another process in it).
 */
import net from 'node:net';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnNode, startLocalCluster, type LocalCluster, type NodeLaunch } from '../packages/cli/src/local-cluster.js';

let cluster: LocalCluster | null = null;
const squatters: net.Server[] = [];
afterEach(async () => {
  await cluster?.stop();
  cluster = null;
  for (const s of squatters.splice(0)) s.close();
});

/** Takes `port` on 127.0.0.1 first, as another process would: accepts connections and never answers them. */
async function squat(port: number): Promise<void> {
  const server = net.createServer(() => undefined);
  squatters.push(server);
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
}

describe('the local cluster launcher', () => {
  it.each([
    { taken: 'port', portOf: (n: NodeLaunch) => n.port },
    { taken: 'cluster bus port', portOf: (n: NodeLaunch) => Number(n.argv[n.argv.indexOf('--cluster-port') + 1]) },
  ])('a node whose $taken is taken before it binds it is started again on other ports; the cluster is whole', async ({ portOf }) => {
    const launched: NodeLaunch[] = [];
    cluster = await startLocalCluster({
      primaries: 3,
      config: ['--save', '', '--appendonly', 'no'],
      startNode: async (node) => {
        launched.push(node);
        if (launched.length === 2) await squat(portOf(node));
        return spawnNode(node);
      },
    });
    // Node 2 was launched twice: once on the taken ports, then on others.
    expect(launched.map((n) => n.index)).toEqual([0, 1, 1, 2]);
    const taken = portOf(launched[1]);
    expect(cluster.nodes.map((n) => n.port)).not.toContain(taken);
    expect(cluster.nodes).toHaveLength(3);
    for (const n of cluster.nodes) expect(cluster.cli(n.port, ['CLUSTER', 'INFO'])).toMatch(/cluster_state:ok/);
  });
});
