/**
 * --reconnect: a Link whose socket dropped mid-phase is opened again, with
 * backoff, handshake and all (openConnection). What was in flight on it is
 * lost: handed out, never answered, counted `lost`, not sent again, so the
 * key stream goes on where it was. Any Link recovers the same way: a single
 * server's, a cluster node's, one a redirection opened. Paired with
 * crates/respbench-core/src/recovery.rs.
 */
import { performance } from 'node:perf_hooks';
import { openConnection } from './connection.js';
import type { Counters } from './counters.js';
import type { Link } from './link.js';
import { reconnectDelayMs, type Failure, type Plan, type Reconnect } from './plan.js';
import { ConnectInterrupted } from './transport.js';

/** What Recovery needs of the client whose Link dropped. */
export interface RecoveryOwner {
  readonly ended: boolean;
  readonly links: Link[];
  /** performance.now() after which nothing is sent (Infinity: a counted phase). */
  readonly deadline: number;
  /** Time is up: nothing more is sent. */
  endStream(): void;
  /** Nothing left to send on `link` (its source done, nothing encoded or waiting for it): no need to be up again. */
  idle(link: Link): boolean;
  /** Where attempt `attempt` to open `link` again goes. */
  targetOf(link: Link, attempt: number): Plan;
  /** `link` is open again, at `at` (its attempt's target). */
  reopened(link: Link, at: Plan): void;
  pump(): void;
  fail(failure: Failure): void;
  linkClosed(link: Link, err: NodeJS.ErrnoException | null): void;
}

export class Recovery {
  constructor(
    private readonly owner: RecoveryOwner,
    private readonly reconnect: Reconnect,
    private readonly counters: Counters,
    private readonly signal: AbortSignal | undefined,
  ) {}

  /**
   * `link` dropped (`why` says how): its requests in flight are lost, and it
   * is opened again after the first backoff. A Link opened again that
   * closes before any reply (a server that accepts and closes at once, a
   * proxy with no backend) is the same outage going on, not a recovery: the
   * attempts count on from the last, with its backoff, so
   * --reconnect-attempts bounds it as it bounds a refused connect.
   */
  dropped(link: Link, why: string): void {
    const ring = link.ring;
    const links = this.owner.links;
    // Each lost request leaves the window of the Link it was drawn for.
    if (ring.origin.length > 0) for (let i = 0; i < ring.len; i++) links[ring.origin[ring.at(i)]].charged--;
    else link.charged -= ring.len;
    this.counters.lost += link.detach();
    const silent = link.repliesAtReopen >= 0 && link.replies === link.repliesAtReopen;
    link.silentReopens = silent ? link.silentReopens + 1 : 0;
    if (link.silentReopens >= this.reconnect.attempts) {
      this.owner.fail({ kind: 'closed', message: `${why}; not reconnected after ${this.reconnect.attempts} attempts (--reconnect-attempts): each connection opened again was closed before any reply` });
      return;
    }
    link.downSince = performance.now();
    this.reopen(link, why, link.silentReopens);
  }

  /** Attempt `attempt` (0-based) to open `link` again, after its backoff. */
  private reopen(link: Link, why: string, attempt: number): void {
    const owner = this.owner;
    const r = this.reconnect;
    const go = () => {
      link.retryTimer = null;
      if (owner.ended) return;
      if (performance.now() >= owner.deadline) owner.endStream();
      if (owner.idle(link)) {
        // Parked: opened again only if a redirection sends it requests (resume).
        this.up(link);
        link.parked = true;
        owner.pump();
        return;
      }
      link.opening = true;
      const at = owner.targetOf(link, attempt);
      openConnection(at, this.signal).then(
        (socket) => {
          link.opening = false;
          if (owner.ended) {
            socket.destroy();
            return;
          }
          this.counters.reconnects++;
          this.up(link);
          link.attach(socket);
          owner.reopened(link, at);
          link.repliesAtReopen = link.replies;
          if (link.begin()) {
            link.flush();
            owner.pump();
          }
        },
        (err: unknown) => {
          link.opening = false;
          if (owner.ended) return;
          if (err instanceof ConnectInterrupted) {
            owner.fail({ kind: 'interrupted', message: 'interrupted' });
            return;
          }
          if (attempt + 1 >= r.attempts) {
            this.up(link);
            owner.fail({ kind: 'closed', message: `${why}; not reconnected after ${r.attempts} attempts (--reconnect-attempts), the last: ${(err as Error)?.message ?? String(err)}` });
            return;
          }
          this.reopen(link, why, attempt + 1);
        },
      );
    };
    // A time-bound phase that ends during the wait ends it too.
    const until = Math.min(reconnectDelayMs(r, attempt), owner.deadline - performance.now());
    if (until <= 0) go();
    else link.retryTimer = setTimeout(go, until);
  }

  /** A parked Link (down, nothing left to send) was handed requests: open it again now. */
  resume(link: Link): void {
    if (!link.parked) return;
    link.parked = false;
    link.downSince = performance.now();
    this.reopen(link, `${link.label()}: reopened for redirected requests`, 0);
  }

  /** The time down since the drop counts. */
  up(link: Link): void {
    if (link.downSince < 0) return;
    this.counters.downNs += (performance.now() - link.downSince) * 1e6;
    link.downSince = -1;
  }
}

/**
 * --reconnect: where attempt `attempt` to open a Link goes (as the native
 * engine's recovery.rs reconnect_target). A Link a redirection opened
 * (`target` null) goes back to its `peer`. Under --cluster every other
 * attempt of a fed Link (start-map node `node`) goes to another primary in
 * turn: a primary that died stays dead, and another one answers its
 * requests with MOVED to whoever took its slots over (so the run goes on
 * after a failover).
 */
export function reconnectTarget(plan: Plan, target: Plan | null, node: number, peer: string, attempt: number): Plan {
  if (target === null) {
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(peer)!;
    return { ...plan, host: m[1], port: Number(m[2]), socket: null, cluster: null };
  }
  const cluster = plan.cluster;
  if (!cluster || cluster.nodes.length < 2 || attempt % 2 === 0 || node < 0) return target;
  const n = cluster.nodes.length;
  const other = cluster.nodes[(node + 1 + ((attempt >> 1) % (n - 1))) % n];
  return { ...target, host: other.host, port: other.port };
}
