/**
 * A real Redis Cluster for end-to-end tests: `primaries` × (1 + `replicas`)
 * redis-server processes with cluster-enabled yes on free loopback ports
 * (bus ports chosen too, so port + 10000 need not be free), joined with
 * `redis-cli --cluster create … --cluster-yes`, ready when every node says
 * cluster_state:ok and agrees on the slots. `stop()` ends every process
 * and removes every directory.
 */
import { spawnSync } from 'node:child_process';
import { freePort, startRedis, type RedisServer } from './servers.js';

export interface TestCluster {
  nodes: RedisServer[];
  /** redis-cli -c against a node (any node: -c follows redirections). */
  cli(port: number, ...args: string[]): string;
  /** The ports of the nodes that are primaries now, in slot order. */
  primaries(): number[];
  /** Waits until every live node says cluster_state:ok and they agree on who owns each slot. */
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** redis-cli against a node; `password` (if any) goes by REDISCLI_AUTH. */
function redisCli(port: number, args: string[], password: string | null): string {
  const env = password ? { ...process.env, REDISCLI_AUTH: password } : process.env;
  const r = spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
  return r.stdout.trim();
}

/** `CLUSTER SLOTS` as "first-last:port" lines, sorted: equal on two nodes when they agree. */
function slotView(port: number, password: string | null): string {
  const out = redisCli(port, ['--json', 'CLUSTER', 'SLOTS'], password);
  let rows: unknown[];
  try {
    rows = JSON.parse(out);
  } catch {
    return '';
  }
  return rows
    .map((r) => {
      const row = r as [number, number, [string, number]];
      return `${row[0]}-${row[1]}:${row[2][1]}`;
    })
    .sort()
    .join(',');
}

/** `password`: every node requires it (requirepass, and masterauth for its replicas). */
export async function startCluster(primaries = 3, replicas = 1, extra: string[] = [], password: string | null = null): Promise<TestCluster> {
  const pass = password ? ['--requirepass', password, '--masterauth', password] : [];
  const cli = (port: number, args: string[]) => redisCli(port, args, password);
  const nodes: RedisServer[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (let i = 0; i < primaries * (1 + replicas); i++) {
      const bus = await freePort();
      nodes.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus), '--cluster-node-timeout', '1000', ...pass, ...extra]));
    }
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { encoding: 'utf8', timeout: 60_000, env: password ? { ...process.env, REDISCLI_AUTH: password } : process.env },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stderr}${create.stdout}`);
  } catch (err) {
    await stopAll();
    throw err;
  }
  const live = () => nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null && !n.process.killed);
  const cluster: TestCluster = {
    nodes,
    cli: (port, ...args) => cli(port, ['-c', ...args]),
    primaries: () => {
      const port = live()[0].port;
      const ports: number[] = [];
      for (const line of slotView(port, password).split(',')) {
        const p = Number(line.split(':')[1]);
        if (!ports.includes(p)) ports.push(p);
      }
      return ports;
    },
    waitOk: async (timeoutMs = 20_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const up = live();
        let agreed = false;
        try {
          const ok = up.every((n) => /cluster_state:ok/.test(cli(n.port, ['CLUSTER', 'INFO'])));
          const views = ok ? up.map((n) => slotView(n.port, password)) : [];
          agreed = ok && views.every((v) => v !== '' && v === views[0]);
        } catch {
          // A node going away as we ask: not settled yet.
        }
        if (agreed) return;
        if (Date.now() > deadline) throw new Error('the cluster did not reach cluster_state:ok with one view of the slots');
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    stop: stopAll,
  };
  try {
    await cluster.waitOk();
  } catch (err) {
    await stopAll();
    throw err;
  }
  return cluster;
}
