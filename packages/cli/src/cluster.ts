/**
 * --cluster: finding a Redis Cluster's primaries and who owns which slot
 * before the engine runs (see docs/cluster.md and docs/design.md), and
 * reading a node's topology (readTopology) for the JS engine's refresh
 * during the run (engine-js/topology-refresh.ts). The seeds are tried in order; the
 * first that answers tells the topology: CLUSTER SHARDS (Redis 7+), else
 * CLUSTER SLOTS. Each seed connection is opened through the engines' one
 * place (openConnection), so TLS, AUTH and the rest of the handshake apply
 * to it as to every node's connections.
 */
import type net from 'node:net';
import { ConnectInterrupted, openConnection } from './engine-js/connection.js';
import { nodeLabel, type Plan } from './engine-js/plan.js';
import { fromShards, fromSlots, RespError, type Resp, type Topology } from './topology.js';
import { UsageError } from './usage-error.js';

/** Parses one reply at `at`; null when incomplete. RESP2 and RESP3 (maps as flat arrays). */
export function parseReply(buf: Buffer, at: number): { value: Resp; end: number } | null {
  if (at >= buf.length) return null;
  const eol = buf.indexOf('\r\n', at);
  if (eol < 0) return null;
  const type = String.fromCharCode(buf[at]);
  const line = buf.toString('utf8', at + 1, eol);
  const next = eol + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
    case '!':
      return { value: new RespError(line), end: next };
    case ':':
    case ',':
      return { value: Number(line), end: next };
    case '_':
      return { value: null, end: next };
    case '#':
      return { value: line === 't' ? 1 : 0, end: next };
    case '$':
    case '=': {
      const len = Number(line);
      if (len < 0) return { value: null, end: next };
      if (buf.length < next + len + 2) return null;
      return { value: buf.toString('utf8', next, next + len), end: next + len + 2 };
    }
    case '*':
    case '%':
    case '~':
    case '>': {
      const n = Number(line);
      if (n < 0) return { value: null, end: next };
      const count = type === '%' ? n * 2 : n;
      const items: Resp[] = [];
      let pos = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, pos);
        if (!item) return null;
        items.push(item.value);
        pos = item.end;
      }
      return { value: items, end: pos };
    }
    default:
      throw new Error(`unexpected reply type ${JSON.stringify(type)}`);
  }
}

/** Sends one command on a ready socket and reads its reply, within `timeoutMs`. */
export function command(socket: net.Socket, args: string[], timeoutMs: number): Promise<Resp> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, value?: Resp) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      if (err) reject(err);
      else resolve(value as Resp);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      try {
        const r = parseReply(buf, 0);
        if (r) done(null, r.value);
      } catch (err) {
        done(err as Error);
      }
    };
    const onError = (err: Error) => done(err);
    const onClose = () => done(new Error('the server closed the connection'));
    const timer = setTimeout(() => done(new Error(`no reply to ${args.slice(0, 2).join(' ')} within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.resume();
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

/** A node that answered but refuses to tell its topology (not in cluster mode, a password needed, both commands refused). */
export class TopologyRefused extends Error {}

/**
 * The topology a ready node tells: CLUSTER SHARDS (Redis 7+), else CLUSTER
 * SLOTS when that is refused. Rejects with one line when the node tells none:
 * TopologyRefused when it refuses to, TopologyInvalid (topology.ts) when its
 * reply is not a whole slot map, an Error when the connection fails. Discovery before the run and the engine's refresh during it
 * (engine-js/topology-refresh.ts) both ask through here.
 */
export async function readTopology(socket: net.Socket, seedHost: string, tls: boolean, timeoutMs: number): Promise<Topology> {
  const shards = await command(socket, ['CLUSTER', 'SHARDS'], timeoutMs);
  if (!(shards instanceof RespError)) return fromShards(shards, seedHost, tls);
  if (/cluster support disabled/i.test(shards.text)) throw new TopologyRefused(`not in cluster mode (${shards.text}): leave out --cluster`);
  if (/^NOAUTH\b/.test(shards.text)) throw new TopologyRefused(`the server requires a password (${shards.text}): give it with -a/--pass or REDISCLI_AUTH`);
  const slots = await command(socket, ['CLUSTER', 'SLOTS'], timeoutMs);
  if (slots instanceof RespError) throw new TopologyRefused(`CLUSTER SLOTS answered ${slots.text}`);
  return fromSlots(slots, seedHost);
}

/** `host:port` of a seed as given (for messages). */
function seedText(s: { host: string; port: number }): string {
  return s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`;
}

/**
 * The plan with its cluster topology filled in, from the first seed that
 * answers (the plan's host:port when no --cluster-node was given). Rejects
 * with one line naming every seed tried and why, or ConnectInterrupted.
 */
export async function discoverCluster(plan: Plan, signal?: AbortSignal): Promise<Plan> {
  const cluster = plan.cluster;
  if (!cluster) return plan;
  const seeds = cluster.seeds.length > 0 ? cluster.seeds.map(parseSeed) : [{ host: plan.host, port: plan.port }];
  const timeoutMs = plan.timeoutMs > 0 ? plan.timeoutMs : 10_000;
  const why: string[] = [];
  for (const seed of seeds) {
    let socket: net.Socket | null = null;
    try {
      socket = await openConnection({ ...plan, host: seed.host, port: seed.port, socket: null, cluster: null }, signal);
      const topology = await untilAborted(readTopology(socket, seed.host, plan.tls !== null, timeoutMs), signal);
      const lonely = topology.nodes.findIndex((_, i) => (topology.replicas?.[i]?.length ?? 0) === 0);
      if (cluster.readFrom === 'replica' && lonely >= 0) {
        throw new UsageError(`--read-from replica: primary ${nodeLabel(topology.nodes[lonely])} has no replica to read from (use --read-from any or primary)`);
      }
      return { ...plan, cluster: { seeds: cluster.seeds, ...topology, ...(cluster.readFrom ? { readFrom: cluster.readFrom } : {}) } };
    } catch (err) {
      if (err instanceof ConnectInterrupted || err instanceof UsageError) throw err;
      if (signal?.aborted) throw new ConnectInterrupted();
      const text = plainToTls((err as Error).message, plan);
      why.push(text.startsWith(seedText(seed)) || text.includes(`to ${seedText(seed)}`) ? text : `${seedText(seed)}: ${text}`);
    } finally {
      socket?.destroy();
    }
  }
  throw new Error(`--cluster: no seed node told the topology (${why.join('; ')})`);
}

/**
 * `work`, or ConnectInterrupted as soon as `signal` aborts: a seed that
 * accepted and then says nothing must not hold a Ctrl-C until --timeout.
 * (The caller destroys the socket the work was reading.)
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(new ConnectInterrupted());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ConnectInterrupted());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * A seed that drops a plain connection before any reply is most often a TLS
 * port (redis-server closes a connection whose first bytes are not TLS): say
 * so, since the raw error (ECONNRESET) does not.
 */
function plainToTls(text: string, plan: Plan): string {
  if (plan.tls || !/ECONNRESET|EPIPE|closed the connection/.test(text)) return text;
  return `${text}; closed before any reply: if the cluster's nodes take TLS, add --tls (and --cacert FILE)`;
}

/** `host:port` of a seed (validated by the CLI). */
function parseSeed(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^[\]]+):(\d+)$/.exec(text);
  if (!m) throw new Error(`--cluster-node must be HOST:PORT (got ${text})`);
  return { host: m[1], port: Number(m[2]) };
}
