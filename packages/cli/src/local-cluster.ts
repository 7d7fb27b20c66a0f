/**
 * A Redis Cluster on this machine, for a study's `redis_cluster` target, the
 * benchmark script's cluster rows and the end-to-end tests alike:
 * `primaries` × (1 + `replicas`) redis-servers with cluster-enabled yes on
 * free loopback ports (bus ports chosen too, so port + 10000 need not be
 * free), joined with `redis-cli --cluster create … --cluster-yes`, ready when
 * every live node says cluster_state:ok and they agree on who owns each slot.
 * `stop()` (and a failure on the way) ends every node and removes every
 * directory it made.
 *
 * TLS: `only` gives each node a TLS port and no plain one (its `port` is the
 * TLS port); `also` gives each node a TLS port beside its plain one (`port`
 * stays plain, for tests that check a node over redis-cli while clients go
 * over TLS). Either way the bus and the replication links are TLS too
 * (tls-cluster, tls-replication: the nodes announce their TLS ports) and the
 * cluster is created over TLS. A password is set through a config file in
 * each node's directory (requirepass and masterauth), so it is in no command
 * line; redis-cli gets it by REDISCLI_AUTH.
 *
 * How a node runs is the caller's to choose (`startNode`): the study runs it
 * in a supervised process group with its output in the study's log; the
 * default spawns redis-server with its output discarded.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeCertificates, type Certificates } from './certificates.js';
import { canConnect, freePort } from './ports.js';

/** A running node as its starter keeps it. */
export interface NodeProcess {
  stop(): Promise<void>;
  /** At once (SIGKILL), for a second Ctrl-C. */
  kill(): void;
  /** Why it ended by itself; null while it runs. */
  exitReason(): string | null;
  /** The process itself, when the starter has one to give (the default starter does). */
  child?: ChildProcess;
}

/** What a starter is asked to run: resolve once `port` accepts connections. */
export interface NodeLaunch {
  index: number;
  argv: string[];
  port: number;
  dir: string;
  readyTimeoutMs: number;
  tls: boolean;
}

export interface LocalClusterOptions {
  primaries: number;
  replicas?: number;
  binary?: string;
  tls?: 'only' | 'also' | null;
  /** Also make a second CA that signs nothing (Certificates.otherCa). */
  otherCa?: boolean;
  password?: string | null;
  /** Config directives every node gets after the cluster's own (persistence, timeouts). */
  config?: string[];
  /** Makes a directory for a node or for the certificates (the launcher removes it); default: a temp directory. */
  makeDir?: (purpose: 'node' | 'certificates') => string;
  startNode?: (node: NodeLaunch) => Promise<NodeProcess>;
  /** For the whole start: the nodes, the create, and cluster_state:ok. */
  readyTimeoutMs?: number;
  /** Appended to the message when the cluster is not ready in time (what the caller can do about it). */
  timeoutHint?: string;
  signal?: AbortSignal;
}

export interface LocalClusterNode {
  /** Where a client connects: the plain port, or the TLS port of a TLS-only cluster. */
  port: number;
  tlsPort: number | null;
  dir: string;
  process: NodeProcess;
}

export interface LocalCluster {
  nodes: LocalClusterNode[];
  certificates: Certificates | null;
  /** redis-cli's flags to reach a node's `port` (TLS and the CA for a TLS-only cluster). */
  cliTransport: string[];
  /** redis-cli against a node's `port`; stdout trimmed; throws when it fails. */
  cli(port: number, args: string[]): string;
  /** The ports of the nodes that are primaries now, in slot order. */
  primaries(): number[];
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
  kill(): void;
}

const accepts = (port: number) => canConnect('127.0.0.1', port);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The default starter: redis-server as a child of this process, output
 * discarded, stopped with SIGKILL. `spawned` hears of the process as soon as
 * it exists (before it is ready), for a caller that must be able to kill it
 * from a signal handler.
 */
export async function spawnNode(node: NodeLaunch, spawned: (proc: NodeProcess) => void = () => undefined): Promise<NodeProcess> {
  const child = spawn(node.argv[0], node.argv.slice(1), { stdio: 'ignore' });
  let ended: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      ended = sig ? `killed by ${sig}` : `exited with status ${code}`;
      resolve();
    });
    child.once('error', (err) => {
      ended = err.message;
      resolve();
    });
  });
  const proc: NodeProcess = {
    child,
    exitReason: () => ended,
    kill: () => {
      if (ended === null) child.kill('SIGKILL');
    },
    stop: async () => {
      proc.kill();
      await exited;
    },
  };
  spawned(proc);
  const deadline = Date.now() + node.readyTimeoutMs;
  while (!(await accepts(node.port))) {
    if (ended !== null || Date.now() > deadline) {
      await proc.stop();
      if (ended !== null) throw new NodeExitedError(`redis-server (cluster node ${node.index + 1}) ${ended}`);
      throw new Error(`redis-server (cluster node ${node.index + 1}) did not open port ${node.port} within ${node.readyTimeoutMs / 1000} s`);
    }
    await sleep(50);
  }
  return proc;
}

/**
 * A node that ended before it was ready: most often its port or bus port,
 * free when chosen, was taken by another process before the node bound it.
 * The launcher starts it again on other ports.
 */
export class NodeExitedError extends Error {}

/** Starts of one node before the launcher gives up on it (each on ports chosen afresh). */
const NODE_START_ATTEMPTS = 3;

/** A redis config string, quoted as redis.conf reads it. */
const quoted = (t: string) => `"${t.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

function defaultDir(purpose: 'node' | 'certificates'): string {
  return mkdtempSync(path.join(tmpdir(), purpose === 'node' ? 'respbench-cluster-node-' : 'respbench-cluster-tls-'));
}

/** Runs `redis-cli --cluster create` without blocking this process (an abort kills it). */
function createCluster(args: string[], env: NodeJS.ProcessEnv, signal: AbortSignal | undefined): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const onAbort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(onAbort, 60_000);
    child.on('error', (err) => resolve({ code: -1, out: err.message }));
    child.on('close', (code) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve({ code, out });
    });
  });
}

export async function startLocalCluster(options: LocalClusterOptions): Promise<LocalCluster> {
  const replicas = options.replicas ?? 0;
  const count = options.primaries * (1 + replicas);
  const makeDir = options.makeDir ?? defaultDir;
  const startNode = options.startNode ?? ((node: NodeLaunch) => spawnNode(node));
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const deadline = Date.now() + readyTimeoutMs;
  const { signal, password = null } = options;
  const env = password ? { ...process.env, REDISCLI_AUTH: password } : process.env;
  const nodes: LocalClusterNode[] = [];
  const dirs: string[] = [];
  let certificates: Certificates | null = null;
  const removeDirs = () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.process.stop()));
    removeDirs();
  };
  const fail = async (message: string): Promise<never> => {
    await stop();
    throw new Error(message);
  };

  if (options.tls) {
    const dir = makeDir('certificates');
    dirs.push(dir);
    try {
      certificates = makeCertificates(dir, { otherCa: options.otherCa });
    } catch (err) {
      removeDirs();
      throw err;
    }
  }
  const cliTransport = options.tls === 'only' && certificates ? ['--tls', '--cacert', certificates.ca] : [];
  const cli = (port: number, args: string[]) => {
    const r = spawnSync('redis-cli', [...cliTransport, '-p', String(port), ...args], { encoding: 'utf8', env });
    if (r.status !== 0) throw new Error(`redis-cli -p ${port} ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
    return r.stdout.trim();
  };
  /** Whether the server on `port` is `proc` (INFO's process_id); true when the starter gives no process to compare. */
  const answersAs = (proc: NodeProcess, port: number) => {
    const pid = proc.child?.pid;
    if (pid === undefined) return true;
    // Bounded: what took the port may accept and never answer.
    const r = spawnSync('redis-cli', [...cliTransport, '-p', String(port), 'INFO', 'server'], { encoding: 'utf8', env, timeout: 2000 });
    return r.status === 0 && new RegExp(`^process_id:${pid}\\r?$`, 'm').test(r.stdout);
  };
  /** `CLUSTER SLOTS` as "first-last:port" items, sorted: equal on two nodes when they agree. */
  const slotView = (port: number) => {
    let rows: [number, number, [string, number]][];
    try {
      rows = JSON.parse(cli(port, ['--json', 'CLUSTER', 'SLOTS']));
    } catch {
      return '';
    }
    return rows.map((r) => `${r[0]}-${r[1]}:${r[2][1]}`).sort().join(',');
  };
  const live = () => nodes.filter((n) => n.process.exitReason() === null && !n.process.child?.killed);
  const waitOk = async (timeoutMs = 20_000, until = Date.now() + timeoutMs) => {
    for (;;) {
      const up = live();
      let agreed = false;
      try {
        const ok = up.every((n) => /cluster_state:ok/.test(cli(n.port, ['CLUSTER', 'INFO'])));
        const views = ok ? up.map((n) => slotView(n.port)) : [];
        agreed = ok && views.every((v) => v !== '' && v === views[0]);
      } catch {
        // A node going away as we ask: not settled yet.
      }
      if (agreed) return;
      if (signal?.aborted) throw new Error('interrupted while waiting for cluster_state:ok');
      if (Date.now() > until) throw new Error(`not cluster_state:ok with one view of the slots within ${timeoutMs / 1000} s${options.timeoutHint ?? ''}`);
      await sleep(100);
    }
  };

  try {
    for (let i = 0; i < count; i++) {
      for (let attempt = 1; ; attempt++) {
        if (signal?.aborted) throw new Error('interrupted while starting the nodes');
        const port = await freePort();
        const bus = await freePort();
        const tlsPort = options.tls === 'also' ? await freePort() : options.tls === 'only' ? port : null;
        const dir = makeDir('node');
        dirs.push(dir);
        const conf: string[] = [];
        if (password) {
          const file = path.join(dir, 'respbench-auth.conf');
          writeFileSync(file, `requirepass ${quoted(password)}\nmasterauth ${quoted(password)}\n`, { mode: 0o600 });
          conf.push(file);
        }
        const c = certificates;
        const transport = c
          ? ['--port', options.tls === 'only' ? '0' : String(port), '--tls-port', String(tlsPort), '--tls-cert-file', c.cert, '--tls-key-file', c.key, '--tls-ca-cert-file', c.ca, '--tls-auth-clients', 'no', '--tls-cluster', 'yes', '--tls-replication', 'yes']
          : ['--port', String(port)];
        const argv = [options.binary ?? 'redis-server', ...conf, ...transport, '--bind', '127.0.0.1', '--dir', dir, '--daemonize', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(bus), ...(options.config ?? [])];
        let proc: NodeProcess;
        try {
          proc = await startNode({ index: i, argv, port, dir, readyTimeoutMs: Math.max(1000, deadline - Date.now()), tls: options.tls === 'only' });
        } catch (err) {
          if (err instanceof NodeExitedError && attempt < NODE_START_ATTEMPTS && Date.now() < deadline) continue;
          throw err;
        }
        // The port accepted: this node's, or another process's that took it first (this node then ends).
        if (!answersAs(proc, port)) {
          await proc.stop();
          if (attempt < NODE_START_ATTEMPTS && Date.now() < deadline) continue;
          throw new Error(`cluster node ${i + 1}: port ${port} was answered by another process in ${NODE_START_ATTEMPTS} starts`);
        }
        nodes.push({ port, tlsPort, dir, process: proc });
        // A node with a plain port is ready on it; its TLS port opens a moment later.
        if (options.tls === 'also' && tlsPort !== null) {
          while (!(await accepts(tlsPort))) {
            if (Date.now() > deadline) throw new Error(`cluster node ${i + 1} did not open its TLS port ${tlsPort}`);
            await sleep(50);
          }
        }
        break;
      }
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const addresses = nodes.map((n) => `127.0.0.1:${n.tlsPort ?? n.port}`);
  const createTls = certificates ? ['--tls', '--cacert', certificates.ca] : [];
  const create = await createCluster([...createTls, '--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes'], env, signal);
  if (signal?.aborted) return fail('interrupted while creating the cluster');
  if (create.code !== 0) return fail(`redis-cli --cluster create failed: ${create.out.trim().split('\n').slice(-2).join(' ')}`);
  try {
    await waitOk(readyTimeoutMs, deadline);
  } catch (err) {
    return fail((err as Error).message);
  }
  return {
    nodes,
    certificates,
    cliTransport,
    cli,
    primaries: () => {
      const ports: number[] = [];
      for (const item of slotView(live()[0].port).split(',')) {
        const p = Number(item.split(':')[1]);
        if (!ports.includes(p)) ports.push(p);
      }
      return ports;
    },
    waitOk: (timeoutMs) => waitOk(timeoutMs),
    stop,
    kill: () => {
      for (const n of nodes) n.process.kill();
      removeDirs();
    },
  };
}
