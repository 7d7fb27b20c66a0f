/**
 * --cluster discovery: which port of each node CLUSTER SHARDS gives is used.
 * A cluster with tls-cluster yes announces its nodes' TLS port as `tls-port`
 * and the plain one as `port` (absent when the node has `port 0`); a run with
 * --tls takes the TLS port, a run without it the plain one, for primaries and
 * replicas alike (test/cluster-tls.test.ts runs this against a real cluster).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseReply } from '../src/cluster.js';
import { fromShards, fromSlots, TopologyInvalid, type Resp } from '../src/topology.js';

/** One CLUSTER SHARDS node entry, RESP2-style (a flat [k, v, …] array). */
function member(role: 'master' | 'replica', ports: { port?: number; tls?: number }, health = 'online'): Resp {
  const entry: Resp[] = ['id', `${role}${ports.port ?? ''}${ports.tls ?? ''}`];
  if (ports.port !== undefined) entry.push('port', ports.port);
  if (ports.tls !== undefined) entry.push('tls-port', ports.tls);
  entry.push('ip', '127.0.0.1', 'endpoint', '127.0.0.1', 'role', role, 'replication-offset', 0, 'health', health);
  return entry;
}

const shards = (a: { port?: number; tls?: number }, b: { port?: number; tls?: number }): Resp => [
  ['slots', [0, 8191], 'nodes', [member('master', { port: a.port, tls: a.tls }), member('replica', { port: a.port && a.port + 1, tls: a.tls && a.tls + 1 })]],
  ['slots', [8192, 16383], 'nodes', [member('master', { port: b.port, tls: b.tls }), member('replica', { port: b.port && b.port + 1, tls: b.tls && b.tls + 1 })]],
];

const ports = (t: ReturnType<typeof fromShards>) => ({ nodes: t.nodes.map((n) => n.port), replicas: t.replicas?.map((r) => r.map((n) => n.port)) });

describe('fromShards: the port each node is reached on', () => {
  it('a TLS cluster with plain ports too: --tls takes tls-port, a plain run takes port, replicas as primaries', () => {
    const reply = shards({ port: 7000, tls: 8000 }, { port: 7010, tls: 8010 });
    expect(ports(fromShards(reply, '127.0.0.1', true))).toEqual({ nodes: [8000, 8010], replicas: [[8001], [8011]] });
    expect(ports(fromShards(reply, '127.0.0.1', false))).toEqual({ nodes: [7000, 7010], replicas: [[7001], [7011]] });
  });

  it('a TLS-only cluster (port 0: no `port` field): --tls takes tls-port; a plain run can only name the TLS port (and fails to connect, saying to add --tls)', () => {
    const reply = shards({ tls: 8000 }, { tls: 8010 });
    expect(ports(fromShards(reply, '127.0.0.1', true))).toEqual({ nodes: [8000, 8010], replicas: [[8001], [8011]] });
    expect(ports(fromShards(reply, '127.0.0.1', false))).toEqual({ nodes: [8000, 8010], replicas: [[8001], [8011]] });
  });

  it('a plain cluster (no tls-port announced): port, with or without --tls', () => {
    const reply = shards({ port: 7000 }, { port: 7010 });
    expect(ports(fromShards(reply, '127.0.0.1', true))).toEqual({ nodes: [7000, 7010], replicas: [[7001], [7011]] });
    expect(ports(fromShards(reply, '127.0.0.1', false))).toEqual({ nodes: [7000, 7010], replicas: [[7001], [7011]] });
  });

  it('a port of 0 counts as absent', () => {
    const reply = shards({ port: 0, tls: 8000 }, { port: 0, tls: 8010 });
    expect(ports(fromShards(reply, '127.0.0.1', false)).nodes).toEqual([8000, 8010]);
  });
});

describe('a topology reply that is not a whole slot map (test/vectors/topology.json, shared with the Rust reading)', () => {
  const vectors = JSON.parse(readFileSync(new URL('../../../test/vectors/topology.json', import.meta.url), 'utf8')) as {
    seed: string;
    invalid: { command: 'slots' | 'shards'; case: string; reply: string; error: string }[];
  };
  it.each(vectors.invalid.map((v) => [v.command, v.case, v] as const))('CLUSTER %s: %s is refused with one line naming the node and range', (_c, _n, v) => {
    const parsed = parseReply(Buffer.from(v.reply, 'latin1'), 0);
    expect(parsed?.end).toBe(Buffer.byteLength(v.reply, 'latin1'));
    const read = () => (v.command === 'slots' ? fromSlots(parsed!.value, vectors.seed) : fromShards(parsed!.value, vectors.seed, false));
    expect(read).toThrow(TopologyInvalid);
    expect(read).toThrow(new TopologyInvalid(v.error));
  });
});
