/**
 * A Redis Cluster's slot map from a CLUSTER SHARDS or CLUSTER SLOTS reply,
 * judged whole before anything is used: discovery before the run (both
 * engines take the plan it makes) and the JS engine's refresh during it read
 * every reply through here. A slot outside 0..16383, a range whose start is
 * past its end, two ranges over the same slot, a slot no primary owns, a
 * node with no host or port, a port that is not one: TopologyInvalid with
 * one line naming the node and the range. The rules and the words are those
 * of crates/respbench-core/src/topology.rs (the native engine's refresh);
 * test/vectors/topology.json holds replies both must refuse with the same line.
 */
import type { ClusterNode, ClusterPlan } from './engine-js/plan.js';
import { escapeBytes } from './engine-js/reply.js';
import { SLOTS } from './engine-js/slot.js';

/** A RESP reply as discovery reads it (not the hot path: plain values). */
export type Resp = string | number | null | RespError | Resp[];

export class RespError {
  constructor(readonly text: string) {}
}

/** A reply that cannot be the topology: its message is the one line saying where and why. */
export class TopologyInvalid extends Error {}

export type Topology = Omit<ClusterPlan, 'seeds'>;

function invalid(text: string): never {
  throw new TopologyInvalid(text);
}

function list(v: Resp | undefined, what: string): Resp[] {
  return Array.isArray(v) ? v : invalid(what);
}

/** A RESP3 map (read as a flat array) or a RESP2 flat array of keys and values. */
function map(v: Resp | undefined, what: string): Resp[] {
  const items = list(v, `${what} is not a map`);
  return items.length % 2 === 0 ? items : invalid(`${what} is not a map (an odd number of elements)`);
}

function field(entry: Resp[], key: string): Resp | undefined {
  for (let i = 0; i + 1 < entry.length; i += 2) if (entry[i] === key) return entry[i + 1];
  return undefined;
}

const isInt = (v: Resp | undefined): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** An endpoint label as the native engine's `endpoint_label` writes it. */
function label(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** An announced host: the seed's for an empty one, null for `?` (an endpoint the node does not know). */
function hostOrSeed(host: string, seedHost: string, what: string): string | null {
  if (host === '') return seedHost;
  if (host === '?') return null;
  if (/[\s\p{Cc}]/u.test(host)) {
    const bytes = Buffer.from(host);
    invalid(`${what} has a host that is not a host name: "${escapeBytes(bytes, 0, bytes.length, 64)}"`);
  }
  return host;
}

/** A map under construction: slots claimed so far, each at most once. */
class Builder {
  readonly nodes: ClusterNode[] = [];
  readonly replicas: ClusterNode[][] = [];
  readonly slots: [number, number, number][] = [];
  private readonly index = new Map<string, number>();
  private readonly owners = new Int32Array(SLOTS).fill(-1);

  /** The index of primary `node`, added (with its replicas) the first time it is named. */
  node(node: ClusterNode, replicas: ClusterNode[]): number {
    const key = label(node.host, node.port);
    const known = this.index.get(key);
    if (known !== undefined) return known;
    if (this.nodes.length >= SLOTS) invalid(`the reply names more than ${SLOTS} primaries`);
    this.index.set(key, this.nodes.length);
    this.nodes.push(node);
    this.replicas.push(replicas);
    return this.nodes.length - 1;
  }

  claim(first: number, last: number, node: number): void {
    const { host, port } = this.nodes[node];
    const name = label(host, port);
    if (first < 0 || first > last || last >= SLOTS) invalid(`node ${name}: slot range ${first}-${last} is not within 0-${SLOTS - 1}`);
    for (let slot = first; slot <= last; slot++) {
      const other = this.owners[slot];
      if (other >= 0) {
        const o = this.nodes[other];
        invalid(`node ${name}: slot range ${first}-${last} overlaps a range of node ${label(o.host, o.port)} (slot ${slot})`);
      }
      this.owners[slot] = node;
    }
    this.slots.push([first, last, node]);
  }

  /** The topology, once every slot has its primary. */
  finish(): Topology {
    const gap = this.owners.indexOf(-1);
    if (gap >= 0) {
      let end = gap;
      while (end + 1 < SLOTS && this.owners[end + 1] < 0) end++;
      invalid(`slots ${gap}-${end} have no primary in the reply (is cluster_state ok? see CLUSTER INFO)`);
    }
    return { nodes: this.nodes, slots: this.slots, replicas: this.replicas };
  }
}

/** How messages name a CLUSTER SHARDS node entry: its id when it has one. */
function nodeName(entry: Resp[], shard: number, index: number): string {
  const id = field(entry, 'id');
  if (typeof id !== 'string') return `${index} of shard ${shard}`;
  const bytes = Buffer.from(id);
  return `${escapeBytes(bytes, 0, bytes.length, 64)} (shard ${shard})`;
}

/** A node entry's host: `endpoint` when present, else `ip`; the seed's when it names none. */
function shardHost(entry: Resp[], seedHost: string, name: string): string | null {
  const endpoint = field(entry, 'endpoint');
  const host = endpoint !== undefined ? endpoint : field(entry, 'ip');
  if (host === undefined || host === null) return seedHost;
  if (typeof host !== 'string') invalid(`CLUSTER SHARDS: node ${name} has an endpoint that is not text`);
  return hostOrSeed(host, seedHost, `CLUSTER SHARDS: node ${name}`);
}

/**
 * `port` or `tls-port` as the plan needs: with TLS the `tls-port` (a node
 * with tls-cluster yes announces it; its `port` is absent under `port 0`),
 * without it `port`; the other when that is absent or 0. 0 when neither.
 */
function shardPort(entry: Resp[], tls: boolean, name: string): number {
  const named = (key: string): number => {
    const p = field(entry, key);
    if (p === undefined || p === 0) return 0;
    if (isInt(p) && p >= 1 && p <= 65535) return p;
    return invalid(`CLUSTER SHARDS: node ${name} has a ${key} that is not a port number`);
  };
  const port = named('port');
  const tlsPort = named('tls-port');
  return tls ? tlsPort || port : port || tlsPort;
}

/** The topology from a CLUSTER SHARDS reply: each shard's primary that is not failed, its slot ranges and replicas. */
export function fromShards(reply: Resp, seedHost: string, tls: boolean): Topology {
  const shards = list(reply, 'CLUSTER SHARDS: the reply is not a list');
  const b = new Builder();
  shards.forEach((shardItem, s) => {
    const where = (what: string) => `CLUSTER SHARDS: shard ${s} ${what}`;
    const shard = map(shardItem, `CLUSTER SHARDS: shard ${s}`);
    const rangesItem = field(shard, 'slots');
    if (rangesItem === undefined) invalid(where('has no slots field'));
    const ranges = list(rangesItem, where('has slots that are not a list'));
    if (ranges.length % 2 !== 0) invalid(where('has an odd number of slot bounds'));
    // A primary without slots (being added, or emptied): nothing to route to it.
    if (ranges.length === 0) return;
    const membersItem = field(shard, 'nodes');
    if (membersItem === undefined) invalid(where('has no nodes field'));
    const members = list(membersItem, where('has nodes that are not a list'));
    let primary: ClusterNode | null = null;
    const replicas: ClusterNode[] = [];
    members.forEach((member, n) => {
      const entry = map(member, `CLUSTER SHARDS: shard ${s} node ${n}`);
      const name = nodeName(entry, s, n);
      const role = field(entry, 'role');
      // Not 'fail' (Redis 7.0 says 'loading' for a synced replica whose gossiped offset is still 0).
      if (field(entry, 'health') === 'fail' || (role !== 'master' && role !== 'replica')) return;
      const host = shardHost(entry, seedHost, name);
      const port = shardPort(entry, tls, name);
      if (role === 'master' && primary === null) {
        if (host === null || port === 0) invalid(`CLUSTER SHARDS: primary ${name} announces no endpoint to reach it on`);
        primary = { host, port };
      } else if (role === 'replica' && host !== null && port !== 0) replicas.push({ host, port });
    });
    if (!ranges.every(isInt)) invalid(where('has a slot bound that is not an integer'));
    const bounds = ranges as number[];
    if (primary === null) {
      const text = [];
      for (let i = 0; i < bounds.length; i += 2) text.push(`${bounds[i]}-${bounds[i + 1]}`);
      invalid(where(`(slots ${text.join(' ')}) has no primary that is not failed`));
    }
    const node = b.node(primary, replicas);
    for (let i = 0; i < bounds.length; i += 2) b.claim(bounds[i], bounds[i + 1], node);
  });
  return b.finish();
}

/** A `[host, port, id, …]` node of a CLUSTER SLOTS range; null for host `?` or port 0. */
function slotsEndpoint(item: Resp, seedHost: string, what: string): ClusterNode | null {
  const node = list(item, `${what} is not a list`);
  if (node.length < 2) invalid(`${what} has no host and port`);
  const [hostItem, port] = node;
  let host: string | null;
  if (hostItem === null) host = seedHost;
  else if (typeof hostItem === 'string') host = hostOrSeed(hostItem, seedHost, what);
  else invalid(`${what} has a host that is not text`);
  // No port of the kind that asked (a node with `port 0` seen from a plain connection).
  if (port === 0) return null;
  if (!isInt(port) || port < 1 || port > 65535) invalid(`${what} has a port that is not a port number`);
  return host === null ? null : { host, port };
}

/** The topology from a CLUSTER SLOTS reply: [first, last, [host, port, id, …], replica…] per range. */
export function fromSlots(reply: Resp, seedHost: string): Topology {
  const ranges = list(reply, 'CLUSTER SLOTS: the reply is not a list');
  const b = new Builder();
  ranges.forEach((rangeItem, r) => {
    const where = (what: string) => `CLUSTER SLOTS: range ${r} ${what}`;
    const parts = list(rangeItem, where('is not a list'));
    if (parts.length < 3) invalid(where('has no primary'));
    const [first, last] = parts;
    if (!isInt(first)) invalid(where('has a first slot that is not an integer'));
    if (!isInt(last)) invalid(where('has a last slot that is not an integer'));
    const slots = `CLUSTER SLOTS: slots ${first}-${last}`;
    const primary = slotsEndpoint(parts[2], seedHost, `${slots}: the primary`);
    if (primary === null) invalid(`${slots}: the primary has no known endpoint`);
    const replicas: ClusterNode[] = [];
    parts.slice(3).forEach((item, i) => {
      const replica = slotsEndpoint(item, seedHost, `${slots}: replica ${i}`);
      if (replica !== null) replicas.push(replica);
    });
    b.claim(first, last, b.node(primary, replicas));
  });
  return b.finish();
}
