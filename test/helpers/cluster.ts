/**
 * A real Redis Cluster for end-to-end tests: `primaries` × (1 + `replicas`)
 * redis-server processes with cluster-enabled yes on free loopback ports
 * (bus ports chosen too, so port + 10000 need not be free), joined with
 * `redis-cli --cluster create … --cluster-yes`, ready when every node says
 * cluster_state:ok and agrees on the slots. `stop()` ends every process
 * and removes every directory. With `tls`, every node also has a TLS port
 * (tls-cluster yes, tls-replication yes: the bus and the replication links
 * are TLS too, and the nodes announce their TLS ports) on a certificate made
 * here with openssl, and the cluster is created over TLS; the plain ports
 * stay for the helpers' own redis-cli calls.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, startRedis, waitForPort, type RedisServer } from './servers.js';

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

/**
 * A CA, a certificate for localhost/127.0.0.1 signed by it (serverAuth and
 * clientAuth: the nodes present it to each other on the TLS bus too), and a
 * second CA, in a new temp directory.
 */
function makeCertificates(): { dir: string; ca: string; otherCa: string; cert: string; key: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-cluster-tls-'));
  const openssl = (...args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`);
  };
  for (const ca of ['ca', 'other-ca']) openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '2', '-subj', `/CN=respbench cluster test ${ca}`);
  writeFileSync(path.join(dir, 'node.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'node.key', '-out', 'node.csr', '-subj', '/CN=localhost');
  openssl('x509', '-req', '-in', 'node.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'node.pem', '-days', '2', '-extfile', 'node.ext');
  const file = (name: string) => path.join(dir, name);
  return { dir, ca: file('ca.pem'), otherCa: file('other-ca.pem'), cert: file('node.pem'), key: file('node.key') };
}

/**
 * `password`: every node requires it (requirepass, and masterauth for its
 * replicas). `tls`: every node gets a TLS port too (see the top).
 */
export async function startCluster(primaries = 3, replicas = 1, extra: string[] = [], password: string | null = null, tls = false): Promise<TestCluster> {
  const pass = password ? ['--requirepass', password, '--masterauth', password] : [];
  const cli = (port: number, args: string[]) => redisCli(port, args, password);
  const nodes: RedisServer[] = [];
  let certs: ReturnType<typeof makeCertificates> | null = null;
  const tlsPorts: number[] = [];
  const stopAll = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  };
  try {
    if (tls) certs = makeCertificates();
    for (let i = 0; i < primaries * (1 + replicas); i++) {
      const bus = await freePort();
      let tlsArgs: string[] = [];
      if (certs) {
        tlsPorts.push(await freePort());
        tlsArgs = ['--tls-port', String(tlsPorts[i]), '--tls-cert-file', certs.cert, '--tls-key-file', certs.key, '--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no', '--tls-cluster', 'yes', '--tls-replication', 'yes'];
      }
      nodes.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus), '--cluster-node-timeout', '1000', ...tlsArgs, ...pass, ...extra]));
      if (certs) await waitForPort(tlsPorts[i]);
    }
    const addresses = certs ? tlsPorts.map((p) => `127.0.0.1:${p}`) : nodes.map((n) => `127.0.0.1:${n.port}`);
    const create = spawnSync(
      'redis-cli',
      [...(certs ? ['--tls', '--cacert', certs.ca] : []), '--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes'],
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
    tls: certs ? { ports: tlsPorts, ca: certs.ca, otherCa: certs.otherCa } : null,
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
