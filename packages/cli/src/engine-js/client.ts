/**
 * One client (one of -c) through its share of one phase: its key stream
 * (one RequestSource per Link it feeds: the server's, or under --cluster
 * each primary's share of the stream) and its window of `pipeline` requests
 * per fed Link. It draws requests, encodes them into a Link's buffer and
 * decides what a Link's events mean (done, dropped, failed); the Router
 * (--cluster), the Pacer's Schedule (--rate) and Recovery (--reconnect) are
 * there only when the Plan asks for them, and the closed-loop single-server
 * path writes through its own loop that looks at none of them. Paired with
 * crates/respbench-core/src/client.rs.
 */
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { DEFAULT_CONNECT_TIMEOUT_MS, openConnection } from './connection.js';
import type { Counters } from './counters.js';
import { NO_GENERATION } from './key-names.js';
import { InFlight, type InFlightShape } from './in-flight.js';
import { Link, type LinkOwner } from './link.js';
import type { Pacer, Schedule, Wakeable } from './pacer.js';
import { nodeLabel, type Failure, type Plan } from './plan.js';
import type { ReplyReader } from './reply.js';
import { reconnectTarget, Recovery, type RecoveryOwner } from './recovery.js';
import { OP_GET, OP_SET, type PreparedPlan, type Request, type RequestSource } from './request-source.js';
import { Router, type RouterOwner } from './router.js';
import { nodeTallyOf, type NodeRows, type Tally } from './tally.js';
import type { TopologyRefresh } from './topology-refresh.js';
import { ConnectInterrupted } from './transport.js';

/** Bytes of requests encoded into one write at most (a larger value makes a larger write). */
const MAX_BATCH_BYTES = 256 * 1024;

/**
 * How long a client whose share is answered waits, after closing its side,
 * for the server to close its own: a reply arriving then is one no request
 * asked for (a greeting shifted every reply by one). Redis closes at once; a
 * server that keeps its side open costs the phase this much.
 */
export const CLOSE_WAIT_MS = 200;

/** --cluster: longest wait before looking again at a stream that had nothing for a node. */
const IDLE_WAIT_CAP_MS = 50;

/** One socket the client starts with, and the source that feeds it. */
export interface Feed {
  /** An open socket, from openConnection. */
  socket: net.Socket;
  source: RequestSource;
  /** Where --reconnect opens it again. */
  target: Plan;
  /** --cluster: the primary's index in ClusterPlan.nodes (-1: one server). */
  node: number;
  /** --read-from: a replica's socket (its reads only). */
  replica: boolean;
}

export interface ClientOptions {
  /** Which connection of the phase, 0-based (for messages and the key stream). */
  id: number;
  /** Its place among the phase's clients (the Pacer's index). */
  pacerIndex: number;
  feeds: Feed[];
  prepared: PreparedPlan;
  counters: Counters;
  tally: Tally;
  /** --rate: the client's schedule, and the phase's one Pacer. */
  schedule: Schedule | null;
  pacer: Pacer | null;
  /** performance.now() after which nothing is sent; Infinity for a counted phase. */
  deadline: number;
  /** --cluster, the measured phase: every primary's figures (ClusterPlan.nodes order, then those that joined mid-run). */
  nodes: NodeRows | null;
  /** --cluster: the phase's one topology refresh, shared by its clients' Routers. */
  refresh: TopologyRefresh | null;
  /** Called once when the client is done: with null when its share is answered. */
  finish: (id: number, failure: Failure | null) => void;
  /** Cancels a connect under way (Ctrl-C). */
  signal?: AbortSignal;
}

export class Client implements LinkOwner, RouterOwner, RecoveryOwner, Wakeable {
  readonly id: number;
  readonly pacerIndex: number;
  /** Its Links: the fed ones first (sources[i] feeds links[i]), then those redirections opened. */
  readonly links: Link[] = [];
  private readonly sources: RequestSource[];
  private readonly targets: Plan[];
  private readonly nodeOf: number[];
  readonly deadline: number;
  private readonly prepared: PreparedPlan;
  private readonly counters: Counters;
  private readonly tally: Tally;
  private readonly pipeline: number;
  /**
   * --pipeline-mode batch: per fed Link, requests of its current batch not
   * yet sent (null in window mode); a new batch of `pipeline` opens only
   * once every request of the last is answered.
   */
  private readonly batchLeft: Int32Array | null;
  private readonly batchRequests: number;
  private readonly maxRequestBytes: number;
  private readonly schedule: Schedule | null;
  private readonly pacer: Pacer | null;
  private readonly router: Router | null;
  private readonly recovery: Recovery | null;
  private readonly nodes: NodeRows | null;
  private readonly ringOf: (capacity: number) => InFlight;
  private readonly finish: (id: number, failure: Failure | null) => void;
  private readonly signal: AbortSignal | undefined;
  /** --rate under --cluster: a request of a fed Link's node drawn before it is due, held (encoded) until then. */
  private readonly held: Buffer[];
  private readonly heldLen: Int32Array;
  private readonly heldOrdinal: Float64Array;
  private readonly heldRequest: Request[];
  /**
   * The choice made once: the closed-loop single-server loop, or the one
   * that paces and routes. A prototype method, so every client holds the
   * same function and the call site stays monomorphic however many there are.
   */
  private readonly write: (i: number, n: number, now: number, dueCount: number) => boolean;
  private idleTimer: NodeJS.Timeout | null = null;
  private idleWaitMs = 0;
  private closeWaitTimer: NodeJS.Timeout | null = null;
  /** Links whose socket was ended at completion and has not closed yet. */
  private closeWaitLeft = 0;
  ended = false;
  /** Its share answered, its sides closed: waiting for the servers' close (CLOSE_WAIT_MS at most). */
  private closing = false;
  /** performance.now() when its share was answered; 0 until then. The phase ends at the latest. */
  answeredAt = 0;

  constructor(o: ClientOptions) {
    this.id = o.id;
    this.pacerIndex = o.pacerIndex;
    this.deadline = o.deadline;
    this.prepared = o.prepared;
    this.counters = o.counters;
    this.tally = o.tally;
    this.schedule = o.schedule;
    this.pacer = o.pacer;
    this.nodes = o.nodes;
    this.finish = o.finish;
    this.signal = o.signal;
    const plan = o.prepared.plan;
    this.pipeline = plan.pipeline;
    this.batchLeft = plan.pipelineMode === 'batch' ? new Int32Array(o.feeds.length) : null;
    this.maxRequestBytes = o.prepared.maxRequestBytes;
    this.batchRequests = Math.max(1, Math.min(this.pipeline, Math.floor(MAX_BATCH_BYTES / this.maxRequestBytes)));
    const routed = !!plan.cluster;
    const shape: InFlightShape = { maxKeys: o.prepared.maxKeys, tracksWritten: o.prepared.keyNames !== null, rated: o.schedule !== null, routed };
    this.ringOf = (capacity) => new InFlight(capacity, shape);
    this.sources = o.feeds.map((f) => f.source);
    this.targets = o.feeds.map((f) => f.target);
    this.nodeOf = o.feeds.map((f) => f.node);
    const timeoutMs = plan.timeoutMs > 0 ? plan.timeoutMs : DEFAULT_CONNECT_TIMEOUT_MS;
    this.router = routed ? new Router(this, o.prepared, o.tally, o.id, this.ringOf, timeoutMs, o.refresh) : null;
    this.recovery = plan.reconnect ? new Recovery(this, plan.reconnect, o.counters, o.signal) : null;
    const holds = o.schedule !== null && routed;
    const n = o.feeds.length;
    this.held = o.feeds.map(() => Buffer.allocUnsafe(holds ? this.maxRequestBytes : 0));
    this.heldLen = new Int32Array(n);
    this.heldOrdinal = new Float64Array(n);
    this.heldRequest = o.feeds.map(() => ({ len: 0, op: OP_SET, command: 0, keyHash: 0, keyIndex: 0, keyCount: 1, keys: new Float64Array(holds ? o.prepared.maxKeys : 0), slot: -1, generation: NO_GENERATION }));
    this.write = o.schedule === null && !routed ? this.writeClosedLoop : this.writePacedOrRouted;
    for (const f of o.feeds) {
      const target = f.target.socket ?? nodeLabel(f.target);
      const node = f.node >= 0 && o.nodes !== null ? o.nodes.tallies[f.node] : null;
      const link = new Link(this, o.id, this.links.length, target, this.pipeline, this.ringOf, this.batchRequests * this.maxRequestBytes, o.counters, o.tally, node, f.replica, routed ? this.links : null, routed);
      link.attach(f.socket);
      this.links.push(link);
    }
  }

  /** Requests drawn and not answered yet. */
  get inflightCount(): number {
    let n = 0;
    for (let i = 0; i < this.sources.length; i++) n += this.links[i].charged;
    return n;
  }

  get received(): number {
    return this.tally.received;
  }

  /** Of the replies counted, requests given up after redirections (no answer: AnswerWatch). */
  get givenUp(): number {
    return this.tally.givenUp;
  }

  start(): void {
    this.schedule?.start(performance.now());
    for (const link of this.links) {
      link.begin();
      if (this.ended) return;
    }
    this.pump();
  }

  /** Sends what may go now on every fed Link; completes when everything drawn is answered and nothing is left. */
  pump(): void {
    if (this.ended || this.closing) return;
    // A counted phase has no deadline: no clock read here (the write loop reads it once per batch).
    if (this.deadline !== Infinity && performance.now() >= this.deadline) this.endStream();
    const links = this.links;
    const sources = this.sources;
    const fed = sources.length;
    for (let i = 0; i < fed; i++) if (links[i].socket !== null && (sources[i].remaining > 0 || this.heldLen[i] > 0)) this.sendBatch(i);
    let left = false;
    let charged = false;
    for (let i = 0; i < fed; i++) {
      if (sources[i].remaining > 0 || this.heldLen[i] > 0) left = true;
      if (links[i].charged > 0) charged = true;
    }
    if (this.router !== null) this.router.flush();
    // (A --cluster source may find nothing more for its node while sending.)
    if (!left) {
      if (!charged) this.complete();
    } else if (!charged && this.router !== null && this.schedule === null && this.idleTimer === null) this.lookAgainLater();
  }

  /** --cluster: nothing of a fed node's in the stream just now; look again later (backing off), or at the deadline. */
  private lookAgainLater(): void {
    this.idleWaitMs = Math.min(IDLE_WAIT_CAP_MS, this.idleWaitMs * 2 || 1);
    const wait = Math.min(this.idleWaitMs, Math.max(0, this.deadline - performance.now()));
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      this.pump();
    }, wait);
  }

  /** Time is up: nothing more is sent (a held request included: it was not due before the end). */
  endStream(): void {
    for (const s of this.sources) s.remaining = 0;
    this.heldLen.fill(0);
  }

  /** The Pacer's turn: something is due. */
  onDue(): void {
    this.pump();
  }

  /**
   * Sends what fed Link `i`'s window (and under --rate, the schedule)
   * allows, in writes of at most MAX_BATCH_BYTES, as long as the kernel takes
   * each write whole: a write it takes only part of waits for its completion
   * before the next is encoded.
   */
  private sendBatch(i: number): void {
    const link = this.links[i];
    const source = this.sources[i];
    const schedule = this.schedule;
    const batchLeft = this.batchLeft;
    while (!link.writing) {
      // Requests re-sent elsewhere after a redirection are in the window too.
      let free = this.pipeline - link.charged;
      if (batchLeft !== null) {
        // --pipeline-mode batch: the next batch only once the last is all answered.
        if (batchLeft[i] === 0 && link.charged === 0) batchLeft[i] = this.pipeline;
        free = batchLeft[i];
      }
      if (free <= 0) break;
      const held = this.heldLen[i] > 0 ? 1 : 0;
      // Requests to draw from the stream (a held one goes first, drawn already).
      let count = free - held < source.remaining ? free - held : source.remaining;
      const now = performance.now();
      let dueCount = Infinity;
      if (schedule !== null) {
        // Open loop: only what is due by now. Under --cluster each primary's
        // source walks the whole stream: one of this node's drawn early is
        // held until its time (writePacedOrRouted).
        dueCount = schedule.dueBy(now);
        if (held === 1 && this.heldOrdinal[i] >= dueCount) break;
        const due = dueCount - source.walked;
        if (due < count) count = due;
      }
      if (count < 0) count = 0;
      count += held;
      if (count <= 0) break;
      const charged = link.charged;
      // --cluster: nothing of this node's in the stream just now (or not due yet).
      if (!this.write(i, count < this.batchRequests ? count : this.batchRequests, now, dueCount)) break;
      if (batchLeft !== null) batchLeft[i] -= link.charged - charged;
    }
    // Room for the next due one: the window's, or (batch) the batch's; a batch all sent waits for its replies, not the clock.
    const room = batchLeft === null ? link.charged < this.pipeline : batchLeft[i] > 0 || link.charged === 0;
    if (schedule !== null && !link.writing && (source.remaining > 0 || this.heldLen[i] > 0) && room) {
      // Wake up when the next one is due: the held one, else the stream's next (no earlier one can be this node's).
      const when = schedule.dueAt(this.heldLen[i] > 0 ? this.heldOrdinal[i] : source.walked);
      this.pacer!.wake(this, when < this.deadline ? when : this.deadline);
    }
  }

  /** Closed loop, one server: n requests encoded and written at once; their latency counts from now. */
  private writeClosedLoop(i: number, n: number, now: number): boolean {
    const link = this.links[i];
    const source = this.sources[i];
    const ring = link.ring;
    const names = this.prepared.keyNames;
    const out = link.out;
    let pos = link.outLen;
    let sent = 0;
    for (; sent < n; sent++) {
      const r = source.next(out, pos);
      pos += r.len;
      ring.push(r, now, names !== null && names.onSend(r.command, r.keys, r.keyCount));
    }
    link.charged += sent;
    link.outLen = pos;
    link.flush();
    return true;
  }

  /**
   * Paced or routed: n requests, each recorded with when it was due (--rate)
   * and sent on its slot's Link when a MOVED moved it (--cluster). A request
   * drawn past the due ones (`dueCount`, --rate under --cluster) is held for
   * later, not sent.
   */
  private writePacedOrRouted(i: number, n: number, now: number, dueCount: number): boolean {
    const link = this.links[i];
    const source = this.sources[i];
    const router = this.router;
    const ring = link.ring;
    const names = this.prepared.keyNames;
    link.reserve(n * this.maxRequestBytes);
    const out = link.out;
    let pos = link.outLen;
    let k = 0;
    let sent = 0;
    let straight = 0;
    if (this.heldLen[i] > 0) {
      // Drawn earlier, due now: first in the write, as it is in the stream.
      const h = this.heldRequest[i];
      h.len = this.heldLen[i];
      this.heldLen[i] = 0;
      this.held[i].copy(out, pos, 0, h.len);
      k = 1;
      if (this.place(i, h, out, pos, now, this.heldOrdinal[i], names !== null && names.onSend(h.command, h.keys, h.keyCount))) {
        pos += h.len;
        sent++;
      } else straight++;
    }
    for (; k < n; k++) {
      const request = source.next(out, pos);
      // --cluster: the rest of the stream is other primaries'.
      if (request.len === 0) break;
      // Its number in the client's stream: --rate's schedule.
      const ordinal = source.walked - 1;
      if (ordinal >= dueCount) {
        // --rate under --cluster: this node's next request is not due yet; it waits, encoded, for its time.
        this.hold(i, request, out, pos, ordinal);
        break;
      }
      if (this.place(i, request, out, pos, now, ordinal, names !== null && names.onSend(request.command, request.keys, request.keyCount))) {
        pos += request.len;
        sent++;
      } else straight++;
    }
    if (sent + straight === 0) return false;
    this.idleWaitMs = 0;
    link.charged += sent + straight;
    link.outLen = pos;
    link.flush();
    if (straight > 0) router!.flush();
    return true;
  }

  /** Records a request encoded at `out[at]` on fed Link `i`, or (false) hands it to the Link a MOVED named for its slot. */
  private place(i: number, r: Request, out: Buffer, at: number, now: number, ordinal: number, writtenBefore: boolean): boolean {
    const intended = this.schedule !== null ? this.schedule.intendedFor(ordinal, now) : now;
    const router = this.router;
    if (router !== null) {
      const to = router.linkOf(r.slot);
      if (to >= 0 && to !== i) {
        router.sendDrawn(i, to, r, out, at, now, intended, writtenBefore);
        return false;
      }
    }
    const ring = this.links[i].ring;
    const e = ring.push(r, now, writtenBefore);
    if (ring.intended.length > 0) ring.intended[e] = intended;
    if (ring.origin.length > 0) ring.origin[e] = i;
    return true;
  }

  private hold(i: number, r: Request, out: Buffer, at: number, ordinal: number): void {
    out.copy(this.held[i], 0, at, at + r.len);
    this.heldLen[i] = r.len;
    this.heldOrdinal[i] = ordinal;
    const h = this.heldRequest[i];
    h.op = r.op;
    h.command = r.command;
    h.keyHash = r.keyHash;
    h.keyIndex = r.keyIndex;
    h.keyCount = r.keyCount;
    h.slot = r.slot;
    h.generation = r.generation;
    for (let k = 0; k < h.keys.length && k < r.keyCount; k++) h.keys[k] = r.keys[k];
  }

  /** --cluster: an error reply on `link` that may be a redirection (the Router's). */
  redirected(link: Link, e: number, reader: ReplyReader, now: number): boolean {
    return this.router!.redirected(link, e, reader, now);
  }

  /** --cluster: a Link to a node a redirection named, opened now (its requests wait in its buffer). */
  addLink(target: string): Link {
    const index = this.links.length;
    const node = nodeTallyOf(this.prepared.plan, this.nodes, target);
    const link = new Link(this, this.id, index, target, this.pipeline, this.ringOf, this.maxRequestBytes * 2, this.counters, this.tally, node, false, this.links, true);
    this.links.push(link);
    this.openRedirected(link, target);
    return link;
  }

  /** Opens `link`, a redirection's, at `target`; one its node refuses hands its requests back to the Router (unreachable). */
  private openRedirected(link: Link, target: string): void {
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(target);
    if (!m) {
      this.fail({ kind: 'protocol', message: `${this.label()}: a redirection to "${target}", which is no host:port` });
      return;
    }
    const plan = this.prepared.plan;
    link.opening = true;
    openConnection({ ...plan, host: m[1] === '' ? plan.host : m[1], port: Number(m[2]), socket: null, cluster: null }, this.signal).then(
      (socket) => {
        link.opening = false;
        if (this.ended) {
          socket.destroy();
          return;
        }
        link.attach(socket);
        if (link.begin()) link.flush();
      },
      (err: unknown) => {
        link.opening = false;
        if (this.ended) return;
        if (err instanceof ConnectInterrupted) this.fail({ kind: 'interrupted', message: 'interrupted' });
        else this.router!.unreachable(link, `redirected to ${target}: ${(err as Error)?.message ?? String(err)}`);
      },
    );
  }

  /** Recovery: nothing left to send on `link` (its source done, nothing a redirection encoded or queued for it). */
  idle(link: Link): boolean {
    const i = link.index;
    if (link.ring.len > 0 || (link.waiting !== null && link.waiting.len > 0)) return false;
    return i >= this.sources.length || (this.sources[i].remaining === 0 && this.heldLen[i] === 0);
  }

  /** The Router handed `link` requests while it has no socket: a parked one (--reconnect, down with nothing to send) or a redirection's its node refused is opened again. */
  needsSocket(link: Link): void {
    if (link.parked) this.recovery?.resume(link);
    // A redirection's Link its node refused (down then, perhaps back now on its address): opened again for them.
    else if (link.index >= this.sources.length && !link.opening && link.downSince < 0 && !this.ended) this.openRedirected(link, link.peerBytes.toString('latin1'));
  }

  /** --reconnect: where attempt `attempt` to open `link` goes (recovery.ts reconnectTarget). */
  targetOf(link: Link, attempt: number): Plan {
    const i = link.index;
    return reconnectTarget(this.prepared.plan, i < this.targets.length ? this.targets[i] : null, i < this.nodeOf.length ? this.nodeOf[i] : -1, link.peer, attempt);
  }

  /** --reconnect: `link` is open again at `at` (--cluster: maybe another primary, its own down): that node's from now on, its row too; a MOVED to the node it left opens a Link there, not back on this one. */
  reopened(link: Link, at: Plan): void {
    if (this.router === null) return;
    const label = at.socket ?? nodeLabel(at);
    if (link.peerBytes.toString('latin1') === label) return;
    link.peerBytes = Buffer.from(label, 'latin1');
    link.node = nodeTallyOf(this.prepared.plan, this.nodes, label);
    const node = link.index < this.nodeOf.length ? this.nodeOf[link.index] : -1;
    if (!link.replica && node >= 0) this.router.rehome(node, label);
  }

  /** A Link's socket closed or failed: the close wait ends, or (--reconnect) it is opened again, or the run ends. */
  linkClosed(link: Link, err: NodeJS.ErrnoException | null): void {
    if (this.ended || link.downSince >= 0) return;
    if (this.closing) {
      if (!link.closing) return;
      link.closing = false;
      if (--this.closeWaitLeft === 0) this.end(null);
      return;
    }
    if (this.recovery !== null) {
      this.recovery.dropped(link, link.closedText(err));
      this.pump();
    } else if (link.index >= this.sources.length) {
      this.fail({ kind: 'closed', message: `${this.label()}: the connection to ${link.peer} (where a redirection sent it) ${err ? `failed: ${err.message}` : 'was closed by the server'}` });
    } else this.fail({ kind: 'closed', message: link.closedText(err) });
  }

  /** Send time of the oldest request still waiting, or -1. */
  oldestSentAt(): number {
    let oldest = -1;
    for (const link of this.links) {
      const t = link.oldestSentAt();
      if (t >= 0 && (oldest < 0 || t < oldest)) oldest = t;
    }
    return oldest;
  }

  /** Names the client in messages: which one, and to where (its first Link). */
  label(): string {
    return this.links.length > 0 ? this.links[0].label() : `connection ${this.id}`;
  }

  /** The Link whose oldest request is oldest: the one a --timeout names. */
  stalest(): Link {
    let best = this.links[0];
    let oldest = Infinity;
    for (const link of this.links) {
      const t = link.oldestSentAt();
      if (t >= 0 && t < oldest) {
        oldest = t;
        best = link;
      }
    }
    return best;
  }

  stop(failure: Failure): void {
    this.fail(failure);
  }

  /**
   * Its share answered: close our sides and wait for the servers to close
   * theirs (CLOSE_WAIT_MS at most), so that a reply nobody asked for, still
   * on its way, is seen as the protocol error it is.
   */
  private complete(): void {
    if (this.ended || this.closing) return;
    this.closing = true;
    this.answeredAt = performance.now();
    this.pacer?.forget(this);
    for (const link of this.links) {
      // Every request is answered, so the server has every byte.
      link.settleWrite();
      if (link.socket === null) continue;
      link.closing = true;
      this.closeWaitLeft++;
      link.socket.end();
    }
    if (this.closeWaitLeft === 0) this.end(null);
    else this.closeWaitTimer = setTimeout(() => this.end(null), CLOSE_WAIT_MS);
  }

  fail(failure: Failure): void {
    this.end(failure);
  }

  /** Once only: stops the timers, closes the sockets (at once on a failure) and reports. */
  private end(failure: Failure | null): void {
    if (this.ended) return;
    this.ended = true;
    this.pacer?.forget(this);
    const waited = this.closing;
    this.closing = false;
    if (this.closeWaitTimer) clearTimeout(this.closeWaitTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    for (const link of this.links) {
      if (link.retryTimer) clearTimeout(link.retryTimer);
      if (link.backoffTimer) clearTimeout(link.backoffTimer);
      this.recovery?.up(link);
      const socket = link.socket;
      if (socket === null) continue;
      // After the close wait every request was answered, so nothing unsent is lost.
      if (failure || waited || link.index >= this.sources.length) socket.destroy();
      else socket.end();
    }
    this.finish(this.id, failure);
  }
}
