/**
 * --cluster: the topology asked again mid-run when a MOVED says the map a
 * client routes by is stale, so slots that moved go straight to their new
 * owner before each of them costs a MOVED, and nodes that joined are used.
 * One per phase of this worker, shared by its Clients' Routers: at most one
 * query in flight and at most one started per REFRESH_INTERVAL_MS, so a
 * MOVED storm never becomes a CLUSTER SHARDS storm. The query goes on a
 * connection of its own (never a load Link), opened through the engine's one
 * open path (openConnection: TLS, AUTH and the handshake apply), CLUSTER
 * SHARDS first, CLUSTER SLOTS when that is refused, read as discovery before
 * the run reads it (cluster.ts readTopology). A reply that does not
 * parse whole, or leaves a slot without an owner, changes nothing (counted
 * in `failed`); a cluster that refuses both commands is not asked again in
 * the phase. Paired with
 * crates/respbench-core/src/topology_refresh.rs.
 */
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { readTopology, TopologyRefused } from '../cluster.js';
import { TopologyInvalid } from '../topology.js';
import { openConnection } from './connection.js';
import { nodeLabel, slotOwners, type ClusterPlan, type Plan } from './plan.js';

/** The shortest time between the starts of two queries. */
export const REFRESH_INTERVAL_MS = 100;

/** A cluster's slot map as the Routers apply it: each slot's owner, by label. */
export interface SlotMap {
  /** `host:port` of each primary that owns slots. */
  labels: string[];
  /** slot → index in `labels`. */
  owner: Uint16Array;
}

/** What takes a new map, and another client's MOVED: a Client's Router. */
export interface TopologyListener {
  applyTopology(map: SlotMap): void;
  /** Another client of the phase got a MOVED: `slot` is at `target` (host:port) now. */
  learnMoved(slot: number, target: string): void;
}

export class TopologyRefresh {
  /** Maps applied. */
  applied = 0;
  /** Queries that brought no map: unreachable, refused, or a reply that did not parse whole (the old map kept). */
  failed = 0;
  /** The first reply refused as no whole slot map (`host:port: why`), said once in the result: the old map was kept. */
  rejected: string | null = null;
  /** The cluster refuses to tell its topology (a proxy, say): asking again would get the same, so nothing more is asked this phase. */
  private refused = false;
  private readonly listeners: TopologyListener[] = [];
  private inFlight = false;
  /** A MOVED came while a query was in flight or too soon after one: ask again when allowed. */
  private again = false;
  private lastStart = -Infinity;
  private timer: NodeJS.Timeout | null = null;
  /** The node the next query asks (the last MOVED's: it owns the slot, so its map is at least that new). */
  private seed = '';
  private socket: net.Socket | null = null;
  private closed = false;
  private readonly abort = new AbortController();

  constructor(private readonly plan: Plan) {}

  /** The phase's start map, from the plan's discovery. */
  static initialMap(cluster: ClusterPlan): SlotMap {
    return { labels: cluster.nodes.map(nodeLabel), owner: slotOwners(cluster) };
  }

  subscribe(listener: TopologyListener): void {
    this.listeners.push(listener);
  }

  /** A MOVED named `seed` (host:port) for a slot the map had elsewhere: the map is stale. */
  request(seed: string): void {
    if (this.closed || this.refused) return;
    this.seed = seed;
    if (this.inFlight || this.timer !== null) {
      this.again = true;
      return;
    }
    const wait = this.lastStart + REFRESH_INTERVAL_MS - performance.now();
    if (wait > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.start();
      }, wait);
    } else this.start();
  }

  /** The phase is over: nothing more is asked, a query under way is dropped. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.abort.abort();
    this.socket?.destroy();
  }

  private start(): void {
    if (this.closed) return;
    this.inFlight = true;
    this.again = false;
    this.lastStart = performance.now();
    this.query(this.seed).then(
      (map) => {
        this.inFlight = false;
        if (this.closed) return;
        if (map === null) this.failed++;
        else this.apply(map);
        if (this.again) this.request(this.seed);
      },
      () => {
        this.inFlight = false;
        if (!this.closed) this.failed++;
      },
    );
  }

  /** The map `seed` tells, or null when it tells none whole. */
  private async query(seed: string): Promise<SlotMap | null> {
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(seed);
    if (!m) return null;
    const plan = this.plan;
    const host = m[1] === '' ? plan.host : m[1];
    const timeoutMs = plan.timeoutMs > 0 ? plan.timeoutMs : 10_000;
    try {
      const socket = await openConnection({ ...plan, host, port: Number(m[2]), socket: null, cluster: null, readOnly: false }, this.abort.signal);
      this.socket = socket;
      if (this.closed) return null;
      const topology = await readTopology(socket, host, plan.tls !== null, timeoutMs);
      return TopologyRefresh.initialMap({ seeds: [], ...topology });
    } catch (err) {
      if (err instanceof TopologyRefused) this.refused = true;
      if (err instanceof TopologyInvalid && this.rejected === null) this.rejected = `${seed}: ${err.message}`;
      return null;
    } finally {
      this.socket?.destroy();
      this.socket = null;
    }
  }

  /**
   * `from` got a MOVED: `slot` is at `target` now, news for every other
   * client of the phase (their requests of that slot go straight there too),
   * so while slots move one by one each costs the phase one MOVED between
   * refreshes, not one per connection.
   */
  shareMoved(from: TopologyListener, slot: number, target: string): void {
    for (const l of this.listeners) if (l !== from) l.learnMoved(slot, target);
  }

  /** A map read whole: every Router routes by it from now on. */
  apply(map: SlotMap): void {
    this.applied++;
    for (const l of this.listeners) l.applyTopology(map);
  }
}
