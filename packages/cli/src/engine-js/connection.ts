/**
 * One connection driven through its share of one phase: a sliding window of
 * `pipeline` requests in flight, batched writes, replies counted as they
 * arrive. `openConnection` is the one place a connection is opened and made
 * ready. Paired with crates/respbench-core/src/connection.rs.
 *
 * Per connection, a ring of `pipeline` slots holds what each in-flight request
 * needs when its reply arrives (op, key hash, key index, send time) in typed
 * arrays, so a reply costs no allocation. Requests go out in writes of at most
 * MAX_BATCH_BYTES; a batch is whatever the window allows after each read.
 * Only what the kernel takes is sent: a write it takes only part of is waited
 * for before the next is encoded, so a connection holds at most one write in
 * user space, however large its window (docs/reliability.md, memory).
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Counters } from './counters.js';
import type { LatencyHistogram, OpHistograms } from './histogram.js';
import { nodeLabel, reconnectDelayMs, type Failure, type Plan } from './plan.js';
import { fatalReplyText, HandshakeError, runHandshake } from './handshake.js';
import { escapeBytes, ProtocolError, ReplyKind, ReplyReader } from './reply.js';
import { OP_GET, OP_SET, type Op, type PreparedPlan, type Request, type RequestSource } from './request-source.js';
import { KeyStream } from './keys.js';
import { firstDifference } from './values.js';
import { ConnectInterrupted, connectTransport, earlyErrors, peerLabel } from './transport.js';

export { ConnectInterrupted };

/** Bytes of requests encoded into one write at most (a larger value makes a larger write). */
const MAX_BATCH_BYTES = 256 * 1024;

/** Connect timeout when the plan has no reply timeout (as the native engine). */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/**
 * How long a connection whose share is answered waits, after closing its
 * side, for the server to close its own: a reply arriving then is one no
 * request asked for (a greeting shifted every reply by one). Redis closes at
 * once; a server that keeps its side open costs the phase this much.
 */
export const CLOSE_WAIT_MS = 200;

/**
 * Opens a connection to the plan's server and makes it ready for load: the
 * one place that does, so the run loop only ever gets a ready socket. The
 * transport first (connectTransport: TCP, a unix socket, or TLS with its
 * handshake done), then makeReady. Each gives up after the plan's --timeout
 * (10 s when that is 0). Rejects with ConnectInterrupted when `signal`
 * aborts, with a message for the user otherwise (the same texts as the
 * native engine's).
 */
export async function openConnection(plan: Plan, signal?: AbortSignal): Promise<net.Socket> {
  const timeoutMs = plan.timeoutMs > 0 ? plan.timeoutMs : DEFAULT_CONNECT_TIMEOUT_MS;
  const socket = await connectTransport(plan, timeoutMs, signal);
  await makeReady(socket, plan, timeoutMs, signal);
  return socket;
}

/**
 * What a ready byte stream (TCP, unix or TLS, from connectTransport) needs
 * before the first request: TCP_NODELAY, then the plan's handshake (HELLO 3 /
 * AUTH, SELECT, CLIENT SETNAME; handshake.ts) answered within its own
 * `timeoutMs`, whatever the transport. A failed handshake rejects with its
 * one-line reason (never the password).
 */
async function makeReady(socket: net.Socket, plan: Plan, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  socket.setNoDelay(true);
  try {
    await runHandshake(socket, plan, timeoutMs, signal, () => new ConnectInterrupted());
  } catch (err) {
    if (err instanceof HandshakeError) throw new Error(`${peerLabel(socket) ?? `${plan.host}:${plan.port}`}: ${err.message}`);
    throw err;
  }
}

/**
 * When a connection may send: a deadline for time-bound phases (--duration,
 * --warmup) and a schedule for --rate.
 */
export interface Pace {
  /** performance.now() after which no request is sent; Infinity for a counted phase. */
  deadline: number;
  /** --rate: ms between two of this connection's requests (1000 × connections / rate); 0 sends as fast as replies allow. */
  intervalMs: number;
  /** --rate: ms into the schedule of this connection's first request (1000 × id / rate), so connections do not fire together. */
  offsetMs: number;
}

/**
 * Node's timers tick in whole milliseconds and may run one late (or early):
 * a timer sleeps until this long before the earliest due request, and the
 * pacer polls the event loop from there on.
 */
const SPIN_MS = 1.25;

/**
 * --rate: wakes a phase's connections when their next request is due. One
 * timer or one setImmediate serves every connection (as the native engine's
 * loop serves its connections), so polling for a deadline under a
 * millisecond costs one callback per event-loop turn, not one per
 * connection, and little garbage for the collector. Sleeps on a timer until
 * SPIN_MS before the earliest due time, then polls the event loop
 * (setImmediate) until it comes: replies are read between polls, and a
 * request goes out within one loop turn of its time. The cost is a busy
 * core for the last SPIN_MS before each due time (nearly always at rates
 * above ~1000/s).
 */
export class Pacer {
  /** Connections waiting for a due time, in no order. */
  private readonly waiting: Connection[] = [];
  /** Each waiting connection's due time, by its socket index; Infinity when not waiting. */
  private readonly dueAt: Float64Array;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private immediate: NodeJS.Immediate | null = null;

  /** `sockets`: the phase's sockets (phaseSockets; under --cluster a connection has one per primary, or more). */
  constructor(sockets: number) {
    this.dueAt = new Float64Array(sockets).fill(Infinity);
  }

  /** Calls `c.onDue()` at `when` (performance.now() time) or as soon after as the event loop allows. */
  wake(c: Connection, when: number): void {
    const due = this.dueAt[c.socketIndex];
    if (due === Infinity) this.waiting.push(c);
    if (when < due) this.dueAt[c.socketIndex] = when;
    this.arm(when);
  }

  /** A connection that ended waits no more; with none left, nothing keeps the event loop alive. */
  forget(c: Connection): void {
    if (this.dueAt[c.socketIndex] === Infinity) return;
    this.dueAt[c.socketIndex] = Infinity;
    const i = this.waiting.indexOf(c);
    this.waiting[i] = this.waiting[this.waiting.length - 1];
    this.waiting.pop();
    if (this.waiting.length === 0) this.disarm();
  }

  private arm(when: number): void {
    if (this.immediate !== null) return;
    const wait = when - performance.now();
    if (wait < SPIN_MS) {
      this.disarm();
      this.immediate = setImmediate(this.onTurn);
      return;
    }
    if (this.timer !== null) {
      if (this.timerAt <= when) return;
      clearTimeout(this.timer);
    }
    this.timerAt = when;
    this.timer = setTimeout(this.onTurn, wait - SPIN_MS);
  }

  private disarm(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.immediate !== null) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    this.timerAt = Infinity;
  }

  private readonly onTurn = (): void => {
    this.timer = null;
    this.immediate = null;
    this.timerAt = Infinity;
    const now = performance.now();
    const waiting = this.waiting;
    let next = Infinity;
    for (let i = 0; i < waiting.length; ) {
      const c = waiting[i];
      const due = this.dueAt[c.socketIndex];
      if (due > now) {
        if (due < next) next = due;
        i++;
        continue;
      }
      // Out of the list before its turn: the turn may ask for the next wake-up.
      this.dueAt[c.socketIndex] = Infinity;
      waiting[i] = waiting[waiting.length - 1];
      waiting.pop();
      c.onDue();
    }
    if (next !== Infinity) this.arm(next);
  };
}

export interface ConnectionOptions {
  /** Which connection of the phase, 0-based (for messages). */
  id: number;
  /** Which socket of the phase (its place in phaseSockets), 0-based: the pacer's index. Under --cluster a connection has several. */
  socketIndex: number;
  /** An open socket, from openConnection. */
  socket: net.Socket;
  source: RequestSource;
  prepared: PreparedPlan;
  /** The phase's counters, shared by its connections. */
  counters: Counters;
  /** The measured phase only: preload and warmup replies are counted, not timed. One per op kind. */
  histogram: OpHistograms | null;
  /** --rate: latency from the actual send, beside the main one from the intended send. */
  serviceHistogram: LatencyHistogram | null;
  /** --rate, the measured phase: how late each request went out against its schedule. */
  lagHistogram: LatencyHistogram | null;
  pace: Pace;
  /** --rate: the phase's one pacer, which wakes a connection when its next request is due. */
  pacer: Pacer | null;
  /** Called once when the connection is done: with null when its share is answered. */
  finish: (id: number, failure: Failure | null) => void;
  /** --reconnect: cancels a reconnect under way (Ctrl-C). */
  signal?: AbortSignal;
  /** --cluster, the measured phase: the figures of the primary this connection's socket goes to. */
  node?: NodeTally | null;
  /** Where a reconnect (--reconnect) opens the connection again: the plan's server, or under --cluster this connection's primary. */
  target?: Plan;
  /** --cluster: the index of that primary in ClusterPlan.nodes (-1 without --cluster). */
  nodeIndex?: number;
  /** --read-from: this socket reads from a replica (a nil there for a written key is a stale read). */
  replica?: boolean;
  /** --cluster, the measured phase: every primary's figures (ClusterPlan.nodes order), for replies from the nodes redirections name. */
  nodes?: NodeTally[] | null;
}

/** --cluster: what the measured phase counts per primary (RawNode). */
export interface NodeTally {
  requests: number;
  errors: number;
  redirections: number;
  histogram: LatencyHistogram;
}

/** Drives one connection through its share of one phase. */
export class Connection {
  readonly id: number;
  readonly socketIndex: number;
  /** The open socket; replaced by a new one after a drop (--reconnect). */
  private socket: net.Socket;
  private readonly signal: AbortSignal | undefined;
  /** --reconnect: performance.now() when the connection dropped; -1 while up. */
  private downSince = -1;
  /** --reconnect: the wait before the next attempt. */
  private retryTimer: NodeJS.Timeout | null = null;
  private readonly source: RequestSource;
  private readonly prepared: PreparedPlan;
  private readonly counters: Counters;
  private readonly histogram: OpHistograms | null;
  private readonly serviceHistogram: LatencyHistogram | null;
  private readonly lagHistogram: LatencyHistogram | null;
  private readonly node: NodeTally | null;
  /** Where --reconnect opens this connection again (its primary under --cluster). */
  private readonly target: Plan;
  private readonly nodeIndex: number;
  /** --read-from: reads from a replica (nil for a written key: stale, not lost). */
  private readonly replica: boolean;
  /** --cluster: connections opened where redirections sent requests (and, after a MOVED, the moved slots' requests); null without --cluster. */
  private readonly detours: Detour[] | null;
  /** --cluster: requests on detours and not answered yet (sent there, or waiting for a retry); they count in the window. */
  private detoured = 0;
  /** --cluster: what each request on a detour needs when its reply comes (made at the first redirection, `pipeline` records). */
  private records: Records | null = null;
  /**
   * --cluster: slot → index in `detours` of the node a MOVED named for it
   * (-1: where the source routes it). Made at the first MOVED. A request of
   * such a slot is sent straight there, not to this connection's node first.
   */
  private slotDetour: Int16Array | null = null;
  /** --cluster: host:port of this connection's socket (made at the first TRYAGAIN on it). */
  private ownTarget: Buffer | null = null;
  /** --cluster, the measured phase: every primary's figures (a reply counts in the row of the node that answered it). */
  private readonly nodes: NodeTally[] | null;
  /** --cluster: a look again at a stream that had nothing for this node, and its growing wait. */
  private idleTimer: NodeJS.Timeout | null = null;
  private idleWaitMs = 0;
  /** --cluster: __rand_int__ draws of requests sent again (not the key stream's). */
  private readonly detourRand: KeyStream;
  /** --cluster: a multi-key request's keys when it is encoded again. */
  private readonly detourKeys: Float64Array;
  private readonly pipeline: number;
  private readonly finish: (id: number, failure: Failure | null) => void;
  /** When this connection may send: the fields of its Pace. */
  private readonly deadline: number;
  private readonly intervalMs: number;
  private readonly offsetMs: number;
  /** The ring of in-flight requests, one slot each: head is the oldest, tail the next free. */
  private readonly ops: Uint8Array;
  /** Which of PreparedPlan.commands each request is: its latency goes to that command's histogram. */
  private readonly commands: Uint16Array;
  private readonly keyHashes: Uint32Array;
  private readonly keyIndexes: Float64Array;
  /** A multi-key command's keys, maxKeys a slot (empty when every command names one key). */
  private readonly slotKeys: Float64Array;
  private readonly maxKeys: number;
  private readonly sentAt: Float64Array;
  /** Reads sent after their key's write was acknowledged (--verify-get, mixed): nil then is a lost write. */
  private readonly writtenBefore: Uint8Array;
  /** --rate: when each request was due; latency counts from here. */
  private readonly intendedAt: Float64Array;
  /**
   * --rate under --cluster: this node's next request, drawn before it was
   * due (the stream's requests between were other primaries'), held here
   * with what its ring slot needs until its time comes; heldLen 0: none.
   * Request k of the connection's stream is due at dueAt(k) whichever
   * primary it goes to, so the connection keeps the schedule it has
   * without --cluster. Allocated with the connection, reused.
   */
  private readonly held: Buffer;
  private heldLen = 0;
  /** Its number in the connection's stream (RequestSource.walked - 1 when drawn). */
  private heldOrdinal = 0;
  /** What its ring slot (or a detour, if its slot moves meanwhile) needs; its keys in heldRequest.keys. */
  private readonly heldRequest: Request;
  private startedAt = 0;
  /** Requests per write at most, and the one write buffer (made at the first write, then reused). */
  private readonly batchRequests: number;
  private out: Buffer | null = null;
  /** The last view of `out` written: reused when the next write has its length (one allocation less per write). */
  private view: Buffer | null = null;
  /**
   * A write the kernel has not wholly taken yet: nothing more is encoded
   * until it has (its callback pumps again), so what waits in user space is
   * at most this one write, whatever the window.
   */
  private writing = false;
  /** Bytes of that write, counted out when it completes. */
  private pendingBytes = 0;
  /** Writes issued and write callbacks seen: the pending write is done when they meet. */
  private writesIssued = 0;
  private writesDone = 0;
  private readonly pacer: Pacer | null;
  private head = 0;
  private tail = 0;
  private inflight = 0;
  /** Requests written whose replies have not come yet. */
  get inflightCount(): number {
    return this.inflight + this.detoured;
  }
  /** Replaced after a drop: a reply cut off by it is gone with the old socket. */
  private reader = new ReplyReader();
  /** host:port of the server (or the socket path), kept for messages written after the socket is gone. */
  private readonly peer: string | null;
  private done = false;
  /** Its share answered, its side closed: waiting for the server to close (CLOSE_WAIT_MS at most). */
  private awaitingClose = false;
  private closeWaitTimer: NodeJS.Timeout | null = null;
  /** performance.now() when its share was answered; 0 until then. The phase ends at the latest. */
  answeredAt = 0;
  received = 0;

  constructor(o: ConnectionOptions) {
    this.id = o.id;
    this.socketIndex = o.socketIndex;
    this.socket = o.socket;
    this.signal = o.signal;
    this.source = o.source;
    this.prepared = o.prepared;
    this.counters = o.counters;
    this.histogram = o.histogram;
    this.serviceHistogram = o.serviceHistogram;
    this.lagHistogram = o.lagHistogram;
    this.node = o.node ?? null;
    this.target = o.target ?? o.prepared.plan;
    this.nodeIndex = o.nodeIndex ?? -1;
    this.replica = o.replica ?? false;
    this.detours = o.prepared.plan.cluster ? [] : null;
    this.nodes = o.nodes ?? null;
    this.detourRand = new KeyStream((o.prepared.plan.seed ^ DETOUR_RAND_SALT) >>> 0, o.id);
    this.pacer = o.pacer;
    this.finish = o.finish;
    this.deadline = o.pace.deadline;
    this.intervalMs = o.pace.intervalMs;
    this.offsetMs = o.pace.offsetMs;
    const pipeline = o.prepared.plan.pipeline;
    this.pipeline = pipeline;
    const perRequest = o.prepared.maxRequestBytes;
    this.batchRequests = Math.max(1, Math.min(pipeline, Math.floor(MAX_BATCH_BYTES / perRequest)));
    this.intendedAt = new Float64Array(this.intervalMs > 0 ? pipeline : 0);
    const holds = this.intervalMs > 0 && !!o.prepared.plan.cluster;
    this.held = Buffer.allocUnsafe(holds ? perRequest : 0);
    this.heldRequest = { len: 0, op: OP_SET, command: 0, keyHash: 0, keyIndex: 0, keyCount: 1, keys: new Float64Array(holds ? o.prepared.maxKeys : 0), slot: -1 };
    this.ops = new Uint8Array(pipeline);
    this.commands = new Uint16Array(pipeline);
    this.keyHashes = new Uint32Array(pipeline);
    this.keyIndexes = new Float64Array(pipeline);
    this.maxKeys = o.prepared.maxKeys;
    this.detourKeys = new Float64Array(this.maxKeys);
    this.slotKeys = new Float64Array(this.maxKeys > 1 ? pipeline * this.maxKeys : 0);
    this.sentAt = new Float64Array(pipeline);
    this.writtenBefore = new Uint8Array(o.prepared.written !== null ? pipeline : 0);
    const socket = o.socket;
    this.peer = peerLabel(socket);
    this.attach(socket);
  }

  /** Takes over an open socket from openConnection; events of a socket it has left are ignored. */
  private attach(socket: net.Socket): void {
    this.socket = socket;
    this.ownTarget = null;
    this.onWritten = (err?: Error | null) => this.written(socket, err);
    socket.on('data', (chunk: Buffer) => {
      if (socket === this.socket) this.onData(chunk);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => this.onClosed(socket, err));
    socket.on('close', () => this.onClosed(socket, null));
    // openConnection leaves a socket that ran a handshake paused.
    socket.resume();
  }

  /** The server's side went away (or the socket failed): the close wait ends, or the run does, or (--reconnect) the connection is opened again. */
  private onClosed(socket: net.Socket, err: NodeJS.ErrnoException | null): void {
    if (socket !== this.socket || this.done || this.downSince >= 0) return;
    if (this.awaitingClose) this.end(null);
    else if (this.prepared.plan.reconnect) this.dropped(this.closedText(err));
    else this.fail({ kind: 'closed', message: this.closedText(err) });
  }

  /**
   * --reconnect: the connection dropped mid-phase. What was in flight is
   * lost (handed out, never answered: counted `lost`, not sent again, so the
   * key stream goes on where it was); the connection is opened again through
   * openConnection, handshake and all, with backoff.
   */
  private dropped(why: string): void {
    const old = this.socket;
    old.removeAllListeners('data');
    old.on('error', () => {});
    old.destroy();
    this.counters.lost += this.inflight;
    this.head = this.tail = this.inflight = 0;
    this.writing = false;
    this.pendingBytes = 0;
    this.writesIssued = this.writesDone = 0;
    this.view = null;
    this.reader = new ReplyReader();
    this.pacer?.forget(this);
    this.downSince = performance.now();
    this.reopen(why, 0);
  }

  /** Attempt `attempt` (0-based) to open the connection again, after its backoff. */
  private reopen(why: string, attempt: number): void {
    const r = this.prepared.plan.reconnect!;
    const wait = reconnectDelayMs(r, attempt);
    const go = () => {
      this.retryTimer = null;
      if (this.done) return;
      if (performance.now() >= this.deadline) this.endStream();
      if (this.source.remaining === 0 && this.heldLen === 0) {
        // Nothing left to send: no need to be up again.
        this.up();
        this.answeredAt = performance.now();
        this.end(null);
        return;
      }
      openConnection(this.reconnectTarget(attempt), this.signal).then(
        (socket) => {
          if (this.done) {
            socket.destroy();
            return;
          }
          this.counters.reconnects++;
          this.up();
          this.attach(socket);
          const early = earlyErrors.get(socket);
          if (early || socket.destroyed || socket.readyState !== 'open') this.onClosed(socket, (early as NodeJS.ErrnoException | undefined) ?? null);
          else this.pump();
        },
        (err: unknown) => {
          if (this.done) return;
          if (err instanceof ConnectInterrupted) {
            this.fail({ kind: 'interrupted', message: 'interrupted' });
            return;
          }
          if (attempt + 1 >= r.attempts) {
            this.up();
            this.fail({ kind: 'closed', message: `${why}; not reconnected after ${r.attempts} attempts (--reconnect-attempts), the last: ${(err as Error)?.message ?? String(err)}` });
            return;
          }
          this.reopen(why, attempt + 1);
        },
      );
    };
    // A time-bound phase that ends during the wait ends it too.
    const until = Math.min(wait, this.deadline - performance.now());
    if (until <= 0) go();
    else this.retryTimer = setTimeout(go, until);
  }

  /**
   * --reconnect: where attempt `attempt` goes. Under --cluster every other
   * attempt goes to another primary (in turn): a primary that died stays
   * dead, and another one answers this connection's requests with MOVED to
   * whoever took its slots over (so the run goes on after a failover).
   */
  private reconnectTarget(attempt: number): Plan {
    const cluster = this.prepared.plan.cluster;
    if (!cluster || cluster.nodes.length < 2 || attempt % 2 === 0 || this.nodeIndex < 0) return this.target;
    const n = cluster.nodes.length;
    const other = cluster.nodes[(this.nodeIndex + 1 + ((attempt >> 1) % (n - 1))) % n];
    return { ...this.target, host: other.host, port: other.port };
  }

  /** The time down since the drop counts. */
  private up(): void {
    if (this.downSince < 0) return;
    this.counters.downNs += (performance.now() - this.downSince) * 1e6;
    this.downSince = -1;
  }

  start(): void {
    this.startedAt = performance.now();
    const early = earlyErrors.get(this.socket);
    if (early || this.socket.destroyed || this.socket.readyState !== 'open') {
      this.onClosed(this.socket, (early as NodeJS.ErrnoException | undefined) ?? null);
      return;
    }
    if (this.source.remaining === 0) {
      this.complete();
      return;
    }
    this.startedAt = performance.now();
    this.pump();
  }

  /** Sends what may go now; if the phase is over and nothing waits, completes. */
  private pump(): void {
    if (this.done || this.awaitingClose || this.downSince >= 0) return;
    // A counted phase has no deadline: no clock read here (sendBatch reads it once per batch).
    if (this.deadline !== Infinity && performance.now() >= this.deadline) this.endStream();
    if (this.source.remaining > 0 || this.heldLen > 0) this.sendBatch();
    // (A --cluster source may find nothing more for its node while sending.)
    if (this.source.remaining === 0 && this.heldLen === 0 && this.inflight === 0 && this.detoured === 0) this.complete();
    else if (this.source.remaining > 0 && this.inflight === 0 && this.detoured === 0 && !this.writing && this.idleTimer === null && this.intervalMs === 0) {
      // --cluster: nothing of this node's in the stream just now; look again later (backing off), or at the deadline.
      this.idleWaitMs = Math.min(IDLE_WAIT_CAP_MS, this.idleWaitMs * 2 || 1);
      const wait = Math.min(this.idleWaitMs, Math.max(0, this.deadline - performance.now()));
      this.idleTimer = setTimeout(() => {
        this.idleTimer = null;
        this.pump();
      }, wait);
    }
  }

  /** Time is up: nothing more is sent (a held request included: it was not due before the end). */
  private endStream(): void {
    this.source.remaining = 0;
    this.heldLen = 0;
  }

  /** Send time of the oldest request still waiting, or -1. */
  oldestSentAt(): number {
    let oldest = this.inflight > 0 ? this.sentAt[this.head] : -1;
    if (this.detours !== null && this.detoured > 0) {
      const sentAt = this.records!.sentAt;
      for (const d of this.detours) {
        const r = d.sent.len > 0 ? d.sent.peek() : d.waiting.len > 0 ? d.waiting.peek() : -1;
        if (r >= 0 && (oldest < 0 || sentAt[r] < oldest)) oldest = sentAt[r];
      }
    }
    return oldest;
  }

  stop(failure: Failure): void {
    this.fail(failure);
  }

  /**
   * Sends what the window (and under --rate, the schedule) allows, in writes
   * of at most MAX_BATCH_BYTES, as long as the kernel takes each write whole:
   * a write it takes only part of waits for its completion before the next
   * is encoded.
   */
  private sendBatch(): void {
    const source = this.source;
    while (!this.writing) {
      // Requests on detours (--cluster) are in the window too.
      const free = this.pipeline - this.inflight - this.detoured;
      if (free <= 0) break;
      const held = this.heldLen > 0 ? 1 : 0;
      // Requests to draw from the stream (a held one goes first, drawn already).
      let count = free - held < source.remaining ? free - held : source.remaining;
      const now = performance.now();
      // --rate: requests of the connection's stream due by now (all of them without a rate).
      let dueCount = Infinity;
      if (this.intervalMs > 0) {
        // Open loop: only what is due by now. Under --cluster the stream's
        // requests are walked by every primary's source: one of this node's
        // drawn early is held until its time (writeRequests).
        dueCount = Math.floor((now - this.startedAt - this.offsetMs) / this.intervalMs) + 1;
        if (held === 1 && this.heldOrdinal >= dueCount) break;
        const due = dueCount - source.walked;
        if (due < count) count = due;
      }
      if (count < 0) count = 0;
      count += held;
      if (count <= 0) break;
      // --cluster: nothing of this node's in the stream just now (or not due yet).
      if (!this.writeRequests(count < this.batchRequests ? count : this.batchRequests, now, dueCount)) break;
    }
    if (this.intervalMs > 0 && !this.writing && (source.remaining > 0 || this.heldLen > 0) && this.inflight + this.detoured < this.pipeline) {
      // Wake up when the next one is due: the held one, else the stream's next (no earlier one can be this node's).
      this.wakeAt(this.dueAt(this.heldLen > 0 ? this.heldOrdinal : source.walked));
    }
  }

  /** --rate: when request k of this connection is due (connections are spread over the interval). */
  private dueAt(k: number): number {
    return this.startedAt + this.offsetMs + k * this.intervalMs;
  }

  /**
   * Encodes n requests into the write buffer and hands them to the kernel in
   * one write; their latency counts from here (nothing of this connection
   * waits in user space before them), or under --rate from when each was
   * due. Bytes out count what the kernel took. `dueCount`: --rate, the
   * requests of the connection's stream due by now; a request drawn past
   * them (--cluster) is held for later, not sent.
   */
  private writeRequests(n: number, now: number, dueCount: number): boolean {
    const source = this.source;
    const out = this.out ?? (this.out = Buffer.allocUnsafe(this.batchRequests * this.prepared.maxRequestBytes));
    const slotDetour = this.slotDetour;
    let pos = 0;
    let i = 0;
    let sent = 0;
    let straight = 0;
    if (this.heldLen > 0) {
      // Drawn earlier, due now: first in the write, as it is in the stream.
      const h = this.heldRequest;
      h.len = this.heldLen;
      this.heldLen = 0;
      i = 1;
      if (slotDetour !== null && h.slot >= 0 && slotDetour[h.slot] >= 0) {
        // --cluster: its slot moved while it waited: straight to the new owner.
        this.sendStraight(slotDetour[h.slot], h, this.held, 0, now, this.intendedFor(this.heldOrdinal, now));
        straight++;
      } else {
        this.held.copy(out, 0, 0, h.len);
        pos = h.len;
        this.place(h.op, h.command, h.keyHash, h.keyIndex, h.keys, h.keyCount, this.heldOrdinal, now);
        sent++;
      }
    }
    for (; i < n; i++) {
      const request = source.next(out, pos);
      // --cluster: the rest of the stream is other primaries'.
      if (request.len === 0) break;
      // Its number in the connection's stream: --rate's schedule.
      const ordinal = source.walked - 1;
      if (ordinal >= dueCount) {
        // --rate under --cluster: this node's next request is not due yet; it waits, encoded, for its time.
        out.copy(this.held, 0, pos, pos + request.len);
        this.heldLen = request.len;
        this.heldOrdinal = ordinal;
        const h = this.heldRequest;
        h.op = request.op;
        h.command = request.command;
        h.keyHash = request.keyHash;
        h.keyIndex = request.keyIndex;
        h.keyCount = request.keyCount;
        h.slot = request.slot;
        for (let k = 0; k < h.keys.length && k < request.keyCount; k++) h.keys[k] = request.keys[k];
        break;
      }
      if (slotDetour !== null && request.slot >= 0 && slotDetour[request.slot] >= 0) {
        // --cluster: its slot moved (a MOVED said where): straight to the new owner, its bytes as encoded.
        this.sendStraight(slotDetour[request.slot], request, out, pos, now, this.intendedFor(ordinal, now));
        straight++;
        continue;
      }
      pos += request.len;
      this.place(request.op, request.command, request.keyHash, request.keyIndex, request.keys, request.keyCount, ordinal, now);
      sent++;
    }
    if (straight > 0) {
      this.idleWaitMs = 0;
      this.flushDetours();
    }
    if (sent === 0) return straight > 0;
    n = sent;
    this.idleWaitMs = 0;
    this.inflight += n;
    this.writesIssued++;
    // The kernel has all of the last write before this one is encoded, so its view may be written again.
    let view = this.view;
    if (view === null || view.length !== pos) view = this.view = pos === out.length ? out : out.subarray(0, pos);
    this.socket.write(view, this.onWritten);
    // Node counts a write in writableLength until the kernel has all of it:
    // 0 now means the kernel took it in this call (the usual case).
    if (this.socket.writableLength === 0) this.counters.bytesOut += pos;
    else {
      this.writing = true;
      this.pendingBytes = pos;
    }
    return true;
  }

  /** Takes the next ring slot for a request written now; `ordinal`: its number in the connection's stream (--rate: when it was due). */
  private place(op: Op, command: number, keyHash: number, keyIndex: number, keys: Float64Array, keyCount: number, ordinal: number, now: number): void {
    const slot = this.tail;
    this.ops[slot] = op;
    this.commands[slot] = command;
    this.keyHashes[slot] = keyHash;
    this.keyIndexes[slot] = keyIndex;
    if (this.maxKeys > 1) for (let k = 0; k < keyCount; k++) this.slotKeys[slot * this.maxKeys + k] = keys[k];
    this.sentAt[slot] = now;
    if (this.prepared.written !== null) this.writtenBefore[slot] = op === OP_GET && this.prepared.written.has(keyIndex) ? 1 : 0;
    if (this.intervalMs > 0) this.intendedAt[slot] = this.intendedFor(ordinal, now);
    this.tail = slot + 1 === this.pipeline ? 0 : slot + 1;
  }

  /** When request `ordinal` of the connection's stream was due (--rate, its schedule lag recorded), or `now` without a rate. */
  private intendedFor(ordinal: number, now: number): number {
    if (this.intervalMs === 0) return now;
    const due = this.dueAt(ordinal);
    this.lagHistogram?.record((now - due) * 1e6);
    return due;
  }

  /** Write callbacks come in order: the last one issued completes the pending write. Made per socket (attach). */
  private onWritten: (err?: Error | null) => void = () => {};

  private written(socket: net.Socket, err?: Error | null): void {
    // A write to a socket left after a drop (--reconnect): the counts were reset with it.
    if (socket !== this.socket) return;
    this.writesDone++;
    if (!this.writing || this.writesDone !== this.writesIssued) return;
    this.writing = false;
    // A failed write also emits 'error', which ends the connection.
    if (err) return;
    this.counters.bytesOut += this.pendingBytes;
    this.pendingBytes = 0;
    this.pump();
  }

  /** --rate: asks the phase's pacer for a turn when the next request is due (the deadline caps it). */
  private wakeAt(when: number): void {
    this.pacer?.wake(this, when < this.deadline ? when : this.deadline);
  }

  /** The pacer's turn: something is due. */
  onDue(): void {
    this.pump();
  }

  private onData(chunk: Buffer): void {
    if (this.done) return;
    const now = performance.now();
    this.counters.bytesIn += chunk.length;
    const reader = this.reader;
    reader.push(chunk);
    try {
      let at = reader.pos;
      while (reader.pending() && reader.next()) {
        if (reader.scanner.kind === ReplyKind.Push) {
          // Out-of-band data (RESP3): no request's answer.
          this.counters.pushes++;
        } else if (this.inflight === 0) {
          this.fail({
            kind: 'protocol',
            message: `${this.label()}: protocol error after ${this.received} replies: a reply no request asked for (the server sent more replies than requests, e.g. a greeting), at byte ${reader.base + at} of the replies: "${escapeBytes(reader.buf, at, reader.pos)}"`,
          });
          return;
        } else {
          this.onReply(reader.buf, now);
          if (this.done) return;
        }
        at = reader.pos;
      }
      // Part of a reply with nothing waiting for it: only a push frame may come unasked.
      if (reader.pending() && this.inflight === 0 && reader.buf[reader.pos] !== 62) {
        this.fail({
          kind: 'protocol',
          message: `${this.label()}: protocol error after ${this.received} replies: unexpected bytes with no request waiting, at byte ${reader.base + reader.pos} of the replies: "${escapeBytes(reader.buf, reader.pos, reader.end)}"`,
        });
        return;
      }
      reader.keepRest();
      if (this.detoured > 0) this.flushDetours();
      this.pump();
    } catch (err) {
      if (err instanceof ProtocolError) {
        this.fail({
          kind: 'protocol',
          message: `${this.label()}: protocol error after ${this.received} replies: ${err.reason} at byte ${reader.base + err.offset} of the replies: "${err.bytes}"`,
        });
        return;
      }
      // A bug here must still end the run with the counters so far, not an uncaught exception.
      this.fail({ kind: 'internal', message: `${this.label()}: internal error after ${this.received} replies: ${(err as Error)?.message ?? String(err)}` });
    }
  }

  /** Names the connection in messages: which one, and to where. */
  label(): string {
    return this.peer ? `connection ${this.id} (${this.peer})` : `connection ${this.id}`;
  }

  /** Says how much of an unfinished reply had arrived, if any, for messages. */
  partialNote(): string {
    const partial = this.reader.partialLength;
    return partial > 0 ? `, in the middle of a reply (${partial} bytes of it received: "${this.reader.describePartial()}")` : '';
  }

  /** Why the server's side of the connection went away. */
  private closedText(err: NodeJS.ErrnoException | null): string {
    const midReply = this.partialNote();
    if (err === null) return `${this.label()}: connection closed by server after ${this.received} replies${midReply}`;
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ECONNABORTED') {
      return `${this.label()}: connection closed by server after ${this.received} replies (${err.code === 'ECONNRESET' ? 'reset' : err.code})${midReply}`;
    }
    return `${this.label()}: ${err.message} after ${this.received} replies${midReply}`;
  }

  private onReply(buf: Buffer, now: number): void {
    const slot = this.head;
    this.head = slot + 1 === this.pipeline ? 0 : slot + 1;
    this.inflight--;
    const scanner = this.reader.scanner;
    const intended = this.intervalMs > 0 ? this.intendedAt[slot] : this.sentAt[slot];
    const writtenBefore = this.prepared.written !== null && this.writtenBefore[slot] === 1;
    if (this.detours !== null && scanner.kind === ReplyKind.Error) {
      const kind = redirectKind(buf, scanner.payloadStart, scanner.payloadLen);
      if (kind !== REDIRECT_NONE) {
        if (this.node !== null) this.node.redirections++;
        // Out of the ring into a record (made once per connection: nothing allocated per request).
        const R = this.recordsFor();
        const r = R.take();
        R.op[r] = this.ops[slot];
        R.command[r] = this.commands[slot];
        R.keyHash[r] = this.keyHashes[slot];
        R.keyIndex[r] = this.keyIndexes[slot];
        for (let k = 0; k < this.maxKeys && this.maxKeys > 1; k++) R.keys[r * this.maxKeys + k] = this.slotKeys[slot * this.maxKeys + k];
        R.sentAt[r] = this.sentAt[slot];
        R.intended[r] = intended;
        R.written[r] = writtenBefore ? 1 : 0;
        R.asking[r] = 0;
        R.hops[r] = 0;
        this.detour(r, kind, buf, scanner.payloadStart, scanner.payloadLen, now, null);
        return;
      }
    }
    this.count(buf, this.reader, now, this.commands[slot], this.keyHashes[slot], this.keyIndexes[slot], this.slotKeys, slot * this.maxKeys, this.sentAt[slot], intended, writtenBefore, this.node);
  }

  /**
   * Counts one reply against the request it answers (from the ring, or sent
   * again after a redirection). A multi-key command's keys are
   * `keys[keysAt..keysAt + keyCount)`.
   */
  private count(buf: Buffer, reader: ReplyReader, now: number, commandIndex: number, keyHash: number, keyIndex: number, keys: Float64Array, keysAt: number, sentAt: number, intended: number, writtenBefore: boolean, node: NodeTally | null): void {
    const scanner = reader.scanner;
    const prepared = this.prepared;
    const command = prepared.commands[commandIndex];
    const op = command.op;
    this.received++;
    const c = this.counters;
    if (this.histogram !== null) {
      const latencyNs = (now - intended) * 1e6;
      this.histogram.byCommand[commandIndex].record(latencyNs);
      if (this.intervalMs > 0) this.serviceHistogram?.record((now - sentAt) * 1e6);
      c.requests++;
      if (node !== null) {
        node.requests++;
        node.histogram.record(latencyNs);
        if (scanner.kind === ReplyKind.Error) node.errors++;
      }
    }
    if (op === OP_SET) c.sets++;
    else c.gets++;
    if (scanner.kind === ReplyKind.Error) {
      c.errors++;
      if (c.firstError === null) c.firstError = buf.toString('latin1', scanner.payloadStart, scanner.payloadStart + Math.min(scanner.payloadLen, 200));
      this.endIfFatal(buf, scanner.payloadStart, scanner.payloadLen);
      return;
    }
    if (op !== OP_GET) {
      c.ok++;
      // Only a write of the key's value makes a later read of it find one (not INCR, LPUSH, …).
      if (command.kind === 'write' && prepared.written !== null) {
        if (command.encoder.keyCount === 1) prepared.written.add(keyIndex);
        else for (let k = 0; k < command.encoder.keyCount; k++) prepared.written.add(keys[keysAt + k]);
      }
      return;
    }
    if (command.arrayReply) {
      this.countArrayReply(buf, reader, keyIndex, keys, keysAt, command.encoder.keyCount);
      return;
    }
    if (scanner.kind === ReplyKind.Nil) {
      // A replica may not have a write yet (replication lag): stale, not lost.
      if (this.replica && ((prepared.written !== null && writtenBefore) || prepared.missFailsVerify)) {
        c.staleReads++;
        c.ok++;
      }
      // A key whose write was acknowledged before this read went out must be there.
      else if (prepared.written !== null && writtenBefore) c.lostWrites++;
      else {
        c.misses++;
        if (!prepared.missFailsVerify) c.ok++;
      }
      return;
    }
    if (!prepared.verify) {
      c.ok++;
      return;
    }
    const kind = scanner.kind;
    if ((kind === ReplyKind.Bulk || kind === ReplyKind.Verbatim) && prepared.values.matches(buf, scanner.payloadStart, scanner.payloadLen, keyHash)) {
      c.ok++;
      return;
    }
    c.mismatches++;
    if (c.firstMismatch === null) c.firstMismatch = this.describeMismatch(buf, scanner, keyIndex);
  }

  /** --cluster: the records of requests on detours, made at the first redirection (the window's size: a request on a detour is one of its `pipeline`). */
  private recordsFor(): Records {
    return this.records ?? (this.records = new Records(this.pipeline, this.maxKeys));
  }

  /**
   * --cluster: a request of a slot a MOVED moved, sent straight to the new
   * owner over this connection's detour there, once: its bytes as the source
   * encoded them are copied to that detour's buffer, and its reply counts in
   * the row of the node that answers it. Its latency counts from `intended`:
   * now, or under --rate when it was due.
   */
  private sendStraight(index: number, request: Request, out: Buffer, at: number, now: number, intended: number): void {
    const R = this.recordsFor();
    const r = R.take();
    R.op[r] = request.op;
    R.command[r] = request.command;
    R.keyHash[r] = request.keyHash;
    R.keyIndex[r] = request.keyIndex;
    if (this.maxKeys > 1) for (let k = 0; k < request.keyCount; k++) R.keys[r * this.maxKeys + k] = request.keys[k];
    R.sentAt[r] = now;
    R.intended[r] = intended;
    const written = this.prepared.written;
    R.written[r] = written !== null && request.op === OP_GET && written.has(request.keyIndex) ? 1 : 0;
    R.asking[r] = 0;
    R.hops[r] = 0;
    const d = this.detours![index];
    d.reserve(request.len);
    out.copy(d.out, d.outLen, at, at + request.len);
    d.outLen += request.len;
    d.sent.push(r);
    this.detoured++;
    if (d.socket === null && !d.opening) this.openDetour(index);
  }

  /**
   * --cluster: a reply said the request (record `r`) belongs elsewhere or
   * later. MOVED and ASK send it again to the node named (ASK after ASKING),
   * on a detour of this connection opened there on first use
   * (openConnection: handshake and all); a MOVED also sends the slot's later
   * requests straight there. TRYAGAIN and CLUSTERDOWN send it again to this
   * node after a backoff, until --timeout has passed since its first
   * answer. Its latency counts from its first send, hops included. The key
   * stream is not touched: the request is the same key and value (a
   * __rand_int__ in it is drawn again). The reply's text is `buf[start,
   * start + len)`, or `why` when that is set. Nothing is allocated per
   * request (a new detour, a MOVED's slot map and a given-up request's text
   * are made once each).
   */
  private detour(r: number, kind: number, buf: Buffer, start: number, len: number, now: number, why: string | null): void {
    const c = this.counters;
    const R = this.records!;
    if (R.hops[r] === 0) R.firstTry[r] = now;
    const hops = ++R.hops[r];
    const timeoutMs = this.prepared.plan.timeoutMs > 0 ? this.prepared.plan.timeoutMs : DEFAULT_CONNECT_TIMEOUT_MS;
    if (hops > MAX_HOPS || now - R.firstTry[r] > timeoutMs) {
      // Given up: the last answer counts as the error reply it is.
      c.errors++;
      if (this.histogram !== null) c.requests++;
      if (R.op[r] === OP_SET) c.sets++;
      else c.gets++;
      this.received++;
      if (c.firstError === null) c.firstError = `${why ?? buf.toString('latin1', start, start + Math.min(len, 300))} (after ${hops - 1} redirections or retries)`;
      R.give(r);
      return;
    }
    this.detoured++;
    let index: number;
    if (kind === REDIRECT_MOVED || kind === REDIRECT_ASK) {
      // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381"
      const end = start + len;
      let space = end - 1;
      while (space > start && buf[space] !== 32) space--;
      index = this.detourTo(buf, space + 1, end);
      if (kind === REDIRECT_MOVED) {
        c.moved++;
        let slot = 0;
        for (let i = start + 6; i < space; i++) slot = slot * 10 + buf[i] - 48;
        this.slotMoved(slot, index);
      } else c.asked++;
      R.asking[r] = kind === REDIRECT_ASK ? 1 : 0;
      // Two nodes sending a request to each other while a slot changes hands: wait before the third hop.
      R.notBefore[r] = hops <= FREE_HOPS ? 0 : now + backoffMs(hops - FREE_HOPS);
    } else {
      c.retried++;
      R.asking[r] = 0;
      R.notBefore[r] = now + backoffMs(hops);
      const own = (this.ownTarget ??= Buffer.from(peerLabel(this.socket) ?? this.peer ?? `${this.target.host}:${this.target.port}`, 'latin1'));
      index = this.detourTo(own, 0, own.length);
    }
    const d = this.detours![index];
    if (R.notBefore[r] > now) {
      d.waiting.push(r);
      if (d.timer === null) this.armDetour(index);
    } else this.encodeOn(index, r);
  }

  /** --cluster: MOVED said `slot` is at detour `index` now: its later requests go straight there (back to the source's routing when that is this connection's own node). */
  private slotMoved(slot: number, index: number): void {
    if (slot < 0 || slot >= SLOTS) return;
    const map = this.slotDetour ?? (this.slotDetour = new Int16Array(SLOTS).fill(-1));
    map[slot] = this.detours![index].target === this.peer ? -1 : index;
  }

  /** --cluster: the index of this connection's detour to the node `buf[start, end)` names (host:port), made on first use. */
  private detourTo(buf: Buffer, start: number, end: number): number {
    const detours = this.detours!;
    for (let i = 0; i < detours.length; i++) {
      const t = detours[i].targetBytes;
      if (t.length === end - start && buf.compare(t, 0, t.length, start, end) === 0) return i;
    }
    const target = buf.toString('latin1', start, end);
    const index = detours.length;
    detours.push(new Detour(target, this.rowOf(target), this.pipeline, this.prepared.maxRequestBytes + ASKING.length, (err) => this.detourWritten(index, err)));
    return index;
  }

  /**
   * --cluster: the row of the per-node table a reply from `target` counts in:
   * the primary's it is, or the primary's it is a replica of (a failover
   * promotes one: the shard's row), else this connection's own.
   */
  private rowOf(target: string): number {
    const cluster = this.prepared.plan.cluster;
    if (cluster) {
      for (let i = 0; i < cluster.nodes.length; i++) {
        if (nodeLabel(cluster.nodes[i]) === target) return i;
        for (const r of cluster.replicas?.[i] ?? []) if (nodeLabel(r) === target) return i;
      }
    }
    return this.nodeIndex;
  }

  /** --cluster: a backoff's end for the first request waiting on detour `index`. */
  private armDetour(index: number): void {
    const d = this.detours![index];
    const wait = Math.max(0, this.records!.notBefore[d.waiting.peek()] - performance.now());
    d.timer = setTimeout(() => {
      d.timer = null;
      if (this.done) return;
      const now = performance.now();
      while (d.waiting.len > 0 && this.records!.notBefore[d.waiting.peek()] <= now) this.encodeOn(index, d.waiting.shift());
      if (d.waiting.len > 0) this.armDetour(index);
      this.flushDetours();
    }, wait);
  }

  /** --cluster: encodes record `r` into detour `index`'s buffer (ASKING first for ASK); opens the detour if it is not. */
  private encodeOn(index: number, r: number): void {
    const d = this.detours![index];
    const R = this.records!;
    const p = this.prepared;
    d.reserve(ASKING.length + p.maxRequestBytes);
    let len = d.outLen;
    if (R.asking[r] === 1) len += ASKING.copy(d.out, len);
    const encoder = p.commands[R.command[r]].encoder;
    if (encoder.keyCount > 1) {
      const keys = this.detourKeys;
      for (let k = 0; k < encoder.keyCount; k++) keys[k] = R.keys[r * this.maxKeys + k];
      len += encoder.encodeKeys(d.out, len, keys, this.detourRand);
    } else len += encoder.encode(d.out, len, R.keyIndex[r], this.detourRand);
    d.outLen = len;
    d.sent.push(r);
    if (d.socket === null && !d.opening) this.openDetour(index);
  }

  /** --cluster: hands every open detour's encoded requests to the kernel, one write each (as the main socket: a write it takes only part of is waited for). */
  private flushDetours(): void {
    const detours = this.detours;
    if (detours === null) return;
    for (const d of detours) {
      if (d.socket === null || d.writing || d.outLen === 0) continue;
      const len = d.outLen;
      d.issued++;
      d.socket.write(d.viewOf(len), d.onWritten);
      if (d.socket.writableLength === 0) {
        this.counters.bytesOut += len;
        d.outLen = 0;
      } else {
        d.writing = true;
        d.writingLen = len;
      }
    }
  }

  /** A detour's write callback: the pending write done, what was encoded behind it goes next. */
  private detourWritten(index: number, err?: Error | null): void {
    const d = this.detours![index];
    d.done++;
    if (!d.writing || d.done !== d.issued) return;
    d.writing = false;
    if (err || this.done) return;
    this.counters.bytesOut += d.writingLen;
    d.out.copyWithin(0, d.writingLen, d.outLen);
    d.outLen -= d.writingLen;
    d.writingLen = 0;
    this.flushDetours();
  }

  private openDetour(index: number): void {
    const d = this.detours![index];
    const m = /^\[?(.*?)\]?:(\d+)$/.exec(d.target);
    if (!m) {
      this.fail({ kind: 'protocol', message: `${this.label()}: a redirection to "${d.target}", which is no host:port` });
      return;
    }
    d.opening = true;
    const plan = { ...this.prepared.plan, host: m[1] === '' ? this.prepared.plan.host : m[1], port: Number(m[2]), socket: null, cluster: null };
    openConnection(plan, this.signal).then(
      (socket) => {
        d.opening = false;
        if (this.done) {
          socket.destroy();
          return;
        }
        d.socket = socket;
        socket.on('data', (chunk: Buffer) => this.onDetourData(d, chunk));
        const closed = (err: Error | null) => {
          if (this.done || this.awaitingClose) return;
          this.fail({ kind: 'closed', message: `${this.label()}: the connection to ${d.target} (where a redirection sent it) ${err ? `failed: ${err.message}` : 'was closed by the server'}` });
        };
        socket.on('error', closed);
        socket.on('close', () => closed(null));
        socket.resume();
        this.flushDetours();
      },
      (err: unknown) => {
        d.opening = false;
        if (this.done) return;
        if (err instanceof ConnectInterrupted) {
          this.fail({ kind: 'interrupted', message: 'interrupted' });
          return;
        }
        // A node that just died (a failover under way): its slots go back to the
        // source's routing, and what was for it asks this connection's own node
        // again after a backoff, until --timeout.
        if (this.slotDetour !== null) for (let s = 0; s < SLOTS; s++) if (this.slotDetour[s] === index) this.slotDetour[s] = -1;
        const text = `redirected to ${d.target}: ${(err as Error)?.message ?? String(err)}`;
        const now = performance.now();
        d.outLen = 0;
        // What was sent there and what waits for a backoff to go there alike, as the native engine does.
        if (d.timer !== null) {
          clearTimeout(d.timer);
          d.timer = null;
        }
        for (let n = d.sent.len + d.waiting.len; n > 0; n--) {
          this.detoured--;
          this.detour(d.sent.len > 0 ? d.sent.shift() : d.waiting.shift(), REDIRECT_RETRY, EMPTY, 0, 0, now, text);
        }
        this.flushDetours();
        this.pump();
      },
    );
  }

  private onDetourData(d: Detour, chunk: Buffer): void {
    if (this.done) return;
    const now = performance.now();
    this.counters.bytesIn += chunk.length;
    const reader = d.reader;
    const R = this.records!;
    const row = this.nodes !== null && d.row >= 0 ? this.nodes[d.row] : null;
    reader.push(chunk);
    try {
      while (reader.pending() && reader.next()) {
        const s = reader.scanner;
        if (s.kind === ReplyKind.Push) {
          this.counters.pushes++;
          continue;
        }
        if (d.sent.len === 0) {
          this.fail({ kind: 'protocol', message: `${this.label()}: protocol error: a reply no request asked for from ${d.target}` });
          return;
        }
        const r = d.sent.peek();
        if (R.asking[r] === 1) {
          // ASKING's own +OK; the request's reply comes next.
          R.asking[r] = 0;
          continue;
        }
        d.sent.shift();
        this.detoured--;
        const kind = s.kind === ReplyKind.Error ? redirectKind(reader.buf, s.payloadStart, s.payloadLen) : REDIRECT_NONE;
        if (kind !== REDIRECT_NONE) {
          if (row !== null) row.redirections++;
          this.detour(r, kind, reader.buf, s.payloadStart, s.payloadLen, now, null);
        } else {
          this.count(reader.buf, reader, now, R.command[r], R.keyHash[r], R.keyIndex[r], R.keys, r * this.maxKeys, R.sentAt[r], R.intended[r], R.written[r] === 1, row);
          R.give(r);
        }
        if (this.done) return;
      }
      reader.keepRest();
      this.flushDetours();
      this.pump();
    } catch (err) {
      if (err instanceof ProtocolError) {
        this.fail({ kind: 'protocol', message: `${this.label()}: protocol error in a reply from ${d.target}: ${err.reason}: "${err.bytes}"` });
        return;
      }
      this.fail({ kind: 'internal', message: `${this.label()}: internal error: ${(err as Error)?.message ?? String(err)}` });
    }
  }

  /**
   * A read answered with one value per key (MGET): each element is checked
   * against its key's value (--verify-get). The request counts once: a
   * mismatch if any key's value differs (the first one described), else a
   * miss if any key was nil, else ok.
   */
  private countArrayReply(buf: Buffer, reader: ReplyReader, keyIndex: number, keys: Float64Array, keysAt: number, keyCount: number): void {
    const c = this.counters;
    const prepared = this.prepared;
    const s = reader.scanner;
    const keyAt = (k: number) => (keyCount === 1 ? keyIndex : keys[keysAt + k]);
    if (s.kind !== ReplyKind.Aggregate || s.payloadLen !== keyCount) {
      if (!prepared.verify) c.ok++;
      else this.arrayMismatch(() => `key ${prepared.keyText(keyAt(0))}: expected an array of ${keyCount} values, got "${escapeBytes(buf, s.payloadStart - 1, Math.min(s.payloadStart + 16, reader.pos), 48)}"`);
      return;
    }
    let pos = s.payloadStart;
    let nils = 0;
    for (let k = 0; k < keyCount; k++) {
      const type = buf[pos];
      if (type === 95) {
        // '_' RESP3 null
        nils++;
        pos += 3;
        continue;
      }
      if (type !== 36) {
        // Not a bulk string: not a value (the rest cannot be walked without the scanner).
        if (prepared.verify) this.arrayMismatch(() => `key ${prepared.keyText(keyAt(k))}: expected a value, got "${escapeBytes(buf, pos, Math.min(pos + 16, reader.pos), 48)}"`);
        else c.ok++;
        return;
      }
      let len = 0;
      let p = pos + 1;
      const negative = buf[p] === 45;
      if (negative) p++;
      while (buf[p] !== 13) len = len * 10 + (buf[p++] - 48);
      p += 2;
      if (negative) {
        nils++;
        pos = p;
        continue;
      }
      if (prepared.verify && !prepared.values.matches(buf, p, len, prepared.keyHashOf(keyAt(k)))) {
        this.arrayMismatch(() => {
          const expected = prepared.valueBytes(keyAt(k));
          const at = firstDifference(expected, 0, expected.length, buf, p, len);
          return `key ${prepared.keyText(keyAt(k))}: ${expected.length} bytes expected, ${len} received, first difference at byte ${at}: expected "${escapeBytes(expected, 0, expected.length, 48)}", got "${escapeBytes(buf, p, p + len, 48)}"`;
        });
        return;
      }
      pos = p + len + 2;
    }
    if (nils === 0) c.ok++;
    else if (this.replica && prepared.missFailsVerify) {
      // --read-from: a preloaded key a replica has not got yet (replication lag): stale, as a single read's nil.
      c.staleReads++;
      c.ok++;
    } else {
      c.misses++;
      if (!prepared.missFailsVerify) c.ok++;
    }
  }

  /** The text is made for the first mismatch only. */
  private arrayMismatch(text: () => string): void {
    this.counters.mismatches++;
    if (this.counters.firstMismatch === null) this.counters.firstMismatch = text();
  }

  /**
   * NOAUTH or NOPERM (handshake.ts fatalReplyText) ends the run at once: the
   * requests after it would all be answered the same way.
   */
  private endIfFatal(buf: Buffer, start: number, len: number): void {
    const b = buf[start];
    if (b !== 0x4e || len < 6) return; // 'N'
    const text = buf.toString('latin1', start, start + Math.min(len, 200));
    const why = fatalReplyText(text, this.prepared.plan.user);
    if (why !== null) this.fail({ kind: 'auth', message: `${this.label()}: ${why} after ${this.received} replies` });
  }

  /**
   * `key K: …` with both lengths and the first byte that differs, both sides
   * shown from a little before it (two 1 MiB values differing at byte 900,000
   * show that byte, not two equal prefixes). Worded as the native engine.
   */
  private describeMismatch(buf: Buffer, s: ReplyReader['scanner'], keyIndex: number): string {
    const key = this.prepared.keyText(keyIndex);
    const expected = this.prepared.valueBytes(keyIndex);
    if (s.kind !== ReplyKind.Bulk && s.kind !== ReplyKind.Verbatim) {
      return `key ${key}: expected a ${expected.length}-byte value, got a non-bulk reply "${escapeBytes(buf, s.payloadStart - 1, s.payloadStart + s.payloadLen + 2, 48)}"`;
    }
    const at = firstDifference(expected, 0, expected.length, buf, s.payloadStart, s.payloadLen);
    const from = at < 16 ? 0 : at - 8;
    const shown = (b: Uint8Array, start: number, len: number) => `"${from > 0 ? '…' : ''}${escapeBytes(b, start + from, start + len, 48)}"`;
    return `key ${key}: ${expected.length} bytes expected, ${s.payloadLen} received, first difference at byte ${at}: expected ${shown(expected, 0, expected.length)}, got ${shown(buf, s.payloadStart, s.payloadLen)}`;
  }

  /**
   * Its share answered: close our side and wait for the server to close its
   * own (CLOSE_WAIT_MS at most), so that a reply nobody asked for, still on its
   * way, is seen as the protocol error it is.
   */
  private complete(): void {
    if (this.done || this.awaitingClose) return;
    if (this.writing) {
      // Every request is answered, so the server has every byte: the write's
      // callback may only come after the phase has added its counters up.
      this.writing = false;
      this.counters.bytesOut += this.pendingBytes;
      this.pendingBytes = 0;
    }
    this.awaitingClose = true;
    this.answeredAt = performance.now();
    this.pacer?.forget(this);
    this.socket.end();
    if (this.detours) for (const d of this.detours) d.socket?.end();
    this.closeWaitTimer = setTimeout(() => this.end(null), CLOSE_WAIT_MS);
  }

  private fail(failure: Failure): void {
    this.end(failure);
  }

  /** Once only: stops the timers, closes the socket (at once on a failure) and reports. */
  private end(failure: Failure | null): void {
    if (this.done) return;
    this.done = true;
    this.pacer?.forget(this);
    const waited = this.awaitingClose;
    this.awaitingClose = false;
    if (this.closeWaitTimer) clearTimeout(this.closeWaitTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    if (this.detours) {
      for (const d of this.detours) {
        if (d.timer) clearTimeout(d.timer);
        d.socket?.destroy();
      }
    }
    this.up();
    // After the close wait every request was answered, so nothing unsent is lost.
    if (failure || waited) this.socket.destroy();
    else this.socket.end();
    this.finish(this.id, failure);
  }
}


/** Hash slots of a cluster. */
const SLOTS = 16384;
const EMPTY = Buffer.alloc(0);

/**
 * --cluster: what each request on a detour needs when its reply comes, one
 * record each, `capacity` of them (the window: a request on a detour is one
 * of its `pipeline`) made once, in typed arrays, with a stack of the free
 * ones: sending a request over a detour allocates nothing.
 */
class Records {
  readonly op: Uint8Array;
  /** Which of PreparedPlan.commands it is. */
  readonly command: Uint16Array;
  readonly keyHash: Uint32Array;
  readonly keyIndex: Float64Array;
  /** A multi-key command's keys, maxKeys a record (empty when every command names one key). */
  readonly keys: Float64Array;
  readonly sentAt: Float64Array;
  /** When it was due: its latency counts from here (the first send, or --rate's schedule). */
  readonly intended: Float64Array;
  readonly written: Uint8Array;
  /** ASK: sent after ASKING, whose +OK comes first. */
  readonly asking: Uint8Array;
  readonly hops: Uint8Array;
  /** When the first redirection came: retries stop --timeout after it. */
  readonly firstTry: Float64Array;
  /** A backoff: not sent again before this (performance.now()). */
  readonly notBefore: Float64Array;
  private readonly free: Int32Array;
  private top: number;

  constructor(capacity: number, maxKeys: number) {
    this.op = new Uint8Array(capacity);
    this.command = new Uint16Array(capacity);
    this.keyHash = new Uint32Array(capacity);
    this.keyIndex = new Float64Array(capacity);
    this.keys = new Float64Array(maxKeys > 1 ? capacity * maxKeys : 0);
    this.sentAt = new Float64Array(capacity);
    this.intended = new Float64Array(capacity);
    this.written = new Uint8Array(capacity);
    this.asking = new Uint8Array(capacity);
    this.hops = new Uint8Array(capacity);
    this.firstTry = new Float64Array(capacity);
    this.notBefore = new Float64Array(capacity);
    this.free = new Int32Array(capacity);
    for (let i = 0; i < capacity; i++) this.free[i] = capacity - 1 - i;
    this.top = capacity;
  }

  take(): number {
    if (this.top === 0) throw new Error('more requests on detours than the window holds');
    return this.free[--this.top];
  }

  give(r: number): void {
    this.free[this.top++] = r;
  }
}

/** A first-in first-out ring of record indexes, its size fixed (the window). */
class Ring {
  private readonly items: Int32Array;
  private head = 0;
  len = 0;

  constructor(capacity: number) {
    this.items = new Int32Array(capacity);
  }

  push(r: number): void {
    let at = this.head + this.len;
    if (at >= this.items.length) at -= this.items.length;
    this.items[at] = r;
    this.len++;
  }

  peek(): number {
    return this.items[this.head];
  }

  shift(): number {
    const r = this.items[this.head];
    this.head = this.head + 1 === this.items.length ? 0 : this.head + 1;
    this.len--;
    return r;
  }
}

/**
 * --cluster: a connection of a Connection to a node where redirections sent
 * requests (and where a MOVED slot's requests then go straight), opened on
 * first use. Its rings and write buffer are made once and reused: requests
 * are encoded into the buffer and go out in one write per turn.
 */
class Detour {
  readonly targetBytes: Buffer;
  socket: net.Socket | null = null;
  opening = false;
  /** Requests encoded (into `out`) or written, in order, waiting for their replies. */
  readonly sent: Ring;
  /** Requests waiting for a backoff to end (TRYAGAIN, a third hop). */
  readonly waiting: Ring;
  timer: NodeJS.Timeout | null = null;
  /** Encoded requests not handed to the kernel yet, from 0 (grows when a turn needs more, then reused). */
  out: Buffer;
  outLen = 0;
  /** The last view of `out` written (viewOf). */
  private view: Buffer | null = null;
  /** A write the kernel has not wholly taken yet: `out[0, writingLen)`; what comes behind waits for it. */
  writing = false;
  writingLen = 0;
  issued = 0;
  done = 0;
  readonly reader = new ReplyReader();

  constructor(
    readonly target: string,
    /** The row of the per-node table its replies count in (index into ClusterPlan.nodes). */
    readonly row: number,
    capacity: number,
    perRequest: number,
    readonly onWritten: (err?: Error | null) => void,
  ) {
    this.targetBytes = Buffer.from(target, 'latin1');
    this.sent = new Ring(capacity);
    this.waiting = new Ring(capacity);
    this.out = Buffer.allocUnsafe(perRequest * Math.min(capacity, 16));
  }

  /** Room for `len` more bytes in `out` (a larger buffer keeps what is there; a write under way keeps the old one). */
  /** `out[0, len)` for a write: the last view again when its length is the same (as the main socket's), so a steady flow of equal batches makes none. */
  viewOf(len: number): Buffer {
    if (len === this.out.length) return this.out;
    let view = this.view;
    if (view === null || view.length !== len) view = this.view = this.out.subarray(0, len);
    return view;
  }

  reserve(len: number): void {
    if (this.outLen + len <= this.out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.outLen + len));
    this.out.copy(bigger, 0, 0, this.outLen);
    this.out = bigger;
    this.view = null;
  }
}

const REDIRECT_NONE = 0;
const REDIRECT_MOVED = 1;
const REDIRECT_ASK = 2;
const REDIRECT_RETRY = 3;

/** --cluster: longest wait before looking again at a stream that had nothing for this node. */
const IDLE_WAIT_CAP_MS = 50;

/** Redirections (or retries) of one request before it counts as the error reply it got (--timeout since the first also ends them). */
const MAX_HOPS = 64;
/** MOVED / ASK hops of one request sent again at once; later ones wait a backoff. */
const FREE_HOPS = 2;

/** The wait before retry `n` (1-based): RETRY_BACKOFF_MS doubled each time, capped. */
function backoffMs(n: number): number {
  return Math.min(RETRY_BACKOFF_CAP_MS, RETRY_BACKOFF_MS * 2 ** Math.min(n - 1, 10));
}
/** TRYAGAIN / CLUSTERDOWN: first wait before sending again, doubled each time, capped. */
const RETRY_BACKOFF_MS = 10;
const RETRY_BACKOFF_CAP_MS = 500;
/** Salt of the __rand_int__ stream of requests sent again (as the native engine's). */
const DETOUR_RAND_SALT = 0x5bd1e995;

const ASKING = Buffer.from('*1\r\n$6\r\nASKING\r\n');

function startsWith(buf: Buffer, start: number, len: number, word: string): boolean {
  if (len < word.length) return false;
  for (let i = 0; i < word.length; i++) if (buf[start + i] !== word.charCodeAt(i)) return false;
  return true;
}

/** Which redirection an error reply is (MOVED, ASK, TRYAGAIN or CLUSTERDOWN), or REDIRECT_NONE. */
export function redirectKind(buf: Buffer, start: number, len: number): number {
  if (startsWith(buf, start, len, 'MOVED ')) return REDIRECT_MOVED;
  if (startsWith(buf, start, len, 'ASK ')) return REDIRECT_ASK;
  if (startsWith(buf, start, len, 'TRYAGAIN') || startsWith(buf, start, len, 'CLUSTERDOWN')) return REDIRECT_RETRY;
  return REDIRECT_NONE;
}
