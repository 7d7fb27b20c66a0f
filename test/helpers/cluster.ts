/**
 * A real Redis Cluster for end-to-end tests, started by the project's one
 * launcher (packages/cli/src/local-cluster.ts): `primaries` × (1 +
 * `replicas`) nodes on free loopback ports, ready when every node says
 * cluster_state:ok and agrees on the slots; `stop()` ends every process and
 * removes every directory. With `tls`, every node also has a TLS port (the
 * bus and the replication links are TLS too, the nodes announce their TLS
 * ports) on a certificate made with openssl, and the cluster is created over
 * TLS; the plain ports stay for the tests' own redis-cli calls. This file
 * only gives the launcher's cluster the shape the tests use.
 */
import { afterAll, expect } from 'vitest';
import { startLocalCluster } from '../../packages/cli/src/local-cluster.js';
import type { RedisServer } from './servers.js';

/** The TLS side of a cluster started with `tls`: each node's TLS port (as `nodes`), and the files. */
export interface ClusterTls {
  ports: number[];
  /** The CA that signed every node's certificate (for --cacert). */
  ca: string;
  /** A second CA that signed nothing here (for "not trusted"). */
  otherCa: string;
}

export interface TestCluster {
  nodes: RedisServer[];
  /** Present when started with `tls`. */
  tls: ClusterTls | null;
  /** redis-cli -c against a node (any node: -c follows redirections). */
  cli(port: number, ...args: string[]): string;
  /** The ports of the nodes that are primaries now, in slot order. */
  primaries(): number[];
  /** Waits until every live node says cluster_state:ok and they agree on who owns each slot. */
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * `extra`: config directives for every node. `password`: every node
 * requires it (requirepass, and masterauth for its replicas). `tls`: every
 * node gets a TLS port too (see the top).
 */
export async function startCluster(primaries = 3, replicas = 1, extra: string[] = [], password: string | null = null, tls = false): Promise<TestCluster> {
  const cluster = await startLocalCluster({
    primaries,
    replicas,
    password,
    tls: tls ? 'also' : null,
    otherCa: tls,
    // As startRedis's servers: no persistence, DEBUG allowed; a short node timeout so failovers in tests are quick.
    config: ['--save', '', '--appendonly', 'no', '--enable-debug-command', 'yes', '--cluster-node-timeout', '1000', ...extra],
  });
  const nodes: RedisServer[] = cluster.nodes.map((n) => ({
    port: n.port,
    dir: n.dir,
    process: n.process.child!,
    cli: (...args: string[]) => cluster.cli(n.port, args),
    stop: () => n.process.stop(),
  }));
  const certs = cluster.certificates;
  return {
    nodes,
    tls: certs ? { ports: cluster.nodes.map((n) => n.tlsPort!), ca: certs.ca, otherCa: certs.otherCa! } : null,
    cli: (port, ...args) => cluster.cli(port, ['-c', ...args]),
    primaries: () => cluster.primaries(),
    waitOk: (timeoutMs) => cluster.waitOk(timeoutMs),
    stop: () => cluster.stop(),
  };
}

/** startCluster's arguments, for clustersAhead. */
export type ClusterShape = Parameters<typeof startCluster>;

/**
 * Clusters a file's tests take one each (a test that changes its cluster for
 * good: a failover, a node killed), all started at once when the first is
 * taken: a start is about 2 s, mostly waiting on redis-cli --cluster create
 * and for cluster_state:ok, and several at once take hardly longer than one.
 * Not before (idle nodes beside the file's timing tests are no help). Call it
 * at the top of the file: every cluster is stopped after the file's tests,
 * taken or not (a test may stop its own earlier: stopping twice is harmless).
 */
export function clustersAhead(shapes: ClusterShape[]): { take(i: number): Promise<TestCluster> } {
  let starts: Promise<TestCluster | Error>[] | null = null;
  afterAll(async () => {
    await Promise.all((starts ?? []).map(async (start) => {
      const c = await start;
      if (!(c instanceof Error)) await c.stop();
    }));
  });
  return {
    take: async (i) => {
      if (i < 0 || i >= shapes.length) throw new Error(`clustersAhead: no cluster ${i} (${shapes.length} asked for)`);
      // A failed start is kept as its error (for its own take to throw), not left as a rejection nobody awaits.
      starts ??= shapes.map((shape) => startCluster(...shape).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))));
      const c = await starts[i];
      if (c instanceof Error) throw c;
      return c;
    },
  };
}

/**
 * A --cluster result's per-node rows add up to its totals: each MOVED, ASK,
 * TRYAGAIN and CLUSTERDOWN counts in the row of the node that sent it, each
 * reply and each request given up in a row too.
 */
export function expectRowsAddUp(result: { perNode: { requests: number; errors: number; redirections: number }[]; requests: number; errors: number; redirections: { moved: number; ask: number; tryagain: number } }): void {
  const sum = (key: 'requests' | 'errors' | 'redirections') => result.perNode.reduce((n, row) => n + row[key], 0);
  const d = result.redirections;
  expect({ requests: sum('requests'), errors: sum('errors'), redirections: sum('redirections') }).toEqual({ requests: result.requests, errors: result.errors, redirections: d.moved + d.ask + d.tryagain });
}
