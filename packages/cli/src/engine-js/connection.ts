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
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Counters } from './counters.js';
import type { LatencyHistogram } from './histogram.js';
import type { Failure, Plan } from './plan.js';
import { escapeBytes, ProtocolError, ReplyKind, ReplyReader } from './reply.js';
import { OP_GET, OP_SET, type PreparedPlan, type RequestSource } from './request-source.js';
import { connectTransport, earlyErrors, peerLabel } from './transport.js';

export { ConnectInterrupted } from './transport.js';

/** Bytes of requests encoded into one write at most (a larger value makes a larger write). */
const MAX_BATCH_BYTES = 256 * 1024;

/** Connect timeout when the plan has no reply timeout (as the native engine). */
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

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
  makeReady(socket, plan);
  return socket;
}

/**
 * What a ready byte stream (TCP, unix or TLS, from connectTransport) needs
 * before the first request: today only TCP_NODELAY. The handshake (AUTH,
 * HELLO, SELECT, CLIENT SETNAME) goes here, after the transport: `socket`
 * carries application bytes whatever the transport.
 */
function makeReady(socket: net.Socket, _plan: Plan): void {
  socket.setNoDelay(true);
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

export interface ConnectionOptions {
  /** Which connection of the phase, 0-based (for messages). */
  id: number;
  /** An open socket, from openConnection. */
  socket: net.Socket;
  source: RequestSource;
  prepared: PreparedPlan;
  /** The phase's counters, shared by its connections. */
  counters: Counters;
  /** The measured phase only: preload and warmup replies are counted, not timed. */
  histogram: LatencyHistogram | null;
  /** --rate: latency from the actual send, beside the main one from the intended send. */
  serviceHistogram: LatencyHistogram | null;
  pace: Pace;
  /** Called once when the connection is done: with null when its share is answered. */
  finish: (id: number, failure: Failure | null) => void;
}

/** Drives one connection through its share of one phase. */
export class Connection {
  readonly id: number;
  private readonly socket: net.Socket;
  private readonly source: RequestSource;
  private readonly prepared: PreparedPlan;
  private readonly counters: Counters;
  private readonly histogram: LatencyHistogram | null;
  private readonly serviceHistogram: LatencyHistogram | null;
  private readonly pipeline: number;
  private readonly finish: (id: number, failure: Failure | null) => void;
  /** When this connection may send: the fields of its Pace. */
  private readonly deadline: number;
  private readonly intervalMs: number;
  private readonly offsetMs: number;
  /** The ring of in-flight requests, one slot each: head is the oldest, tail the next free. */
  private readonly ops: Uint8Array;
  private readonly keyHashes: Uint32Array;
  private readonly keyIndexes: Float64Array;
  private readonly sentAt: Float64Array;
  /** --rate: when each request was due; latency counts from here. */
  private readonly intendedAt: Float64Array;
  /** --rate: requests given a due time so far. */
  private scheduled = 0;
  private startedAt = 0;
  /** Requests per write, and the write buffers: reused once their write completes. */
  private readonly batchRequests: number;
  private readonly freeBuffers: Buffer[] = [];
  private readonly busyBuffers: Buffer[] = [];
  private wakeup: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private head = 0;
  private tail = 0;
  private inflight = 0;
  private readonly reader = new ReplyReader();
  /** host:port of the server (or the socket path), kept for messages written after the socket is gone. */
  private readonly peer: string | null;
  private done = false;
  received = 0;

  constructor(o: ConnectionOptions) {
    this.id = o.id;
    this.socket = o.socket;
    this.source = o.source;
    this.prepared = o.prepared;
    this.counters = o.counters;
    this.histogram = o.histogram;
    this.serviceHistogram = o.serviceHistogram;
    this.finish = o.finish;
    this.deadline = o.pace.deadline;
    this.intervalMs = o.pace.intervalMs;
    this.offsetMs = o.pace.offsetMs;
    const pipeline = o.prepared.plan.pipeline;
    this.pipeline = pipeline;
    const perRequest = o.prepared.maxRequestBytes;
    this.batchRequests = Math.max(1, Math.min(pipeline, Math.floor(MAX_BATCH_BYTES / perRequest)));
    this.intendedAt = new Float64Array(this.intervalMs > 0 ? pipeline : 0);
    this.ops = new Uint8Array(pipeline);
    this.keyHashes = new Uint32Array(pipeline);
    this.keyIndexes = new Float64Array(pipeline);
    this.sentAt = new Float64Array(pipeline);
    const socket = o.socket;
    this.peer = peerLabel(socket);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail({ kind: 'closed', message: this.closedText(err) }));
    socket.on('close', () => {
      if (!this.done) this.fail({ kind: 'closed', message: this.closedText(null) });
    });
  }

  start(): void {
    const early = earlyErrors.get(this.socket);
    if (early || this.socket.destroyed || this.socket.readyState !== 'open') {
      this.fail({ kind: 'closed', message: this.closedText((early as NodeJS.ErrnoException | undefined) ?? null) });
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
    if (this.done) return;
    const now = performance.now();
    if (now >= this.deadline) this.source.remaining = 0;
    if (this.source.remaining > 0) this.sendBatch(now);
    else if (this.inflight === 0) this.complete();
  }

  /** Send time of the oldest request still waiting, or -1. */
  oldestSentAt(): number {
    return this.inflight > 0 ? this.sentAt[this.head] : -1;
  }

  stop(failure: Failure): void {
    this.fail(failure);
  }

  private sendBatch(now: number): void {
    const source = this.source;
    const free = this.pipeline - this.inflight;
    let count = free < source.remaining ? free : source.remaining;
    if (this.intervalMs > 0) {
      // Open loop: only what is due by now; wake up when the next one is.
      const due = Math.floor((now - this.startedAt - this.offsetMs) / this.intervalMs) + 1 - this.scheduled;
      if (due < count) count = due;
      if (count <= 0) {
        this.wakeAt(this.dueAt(this.scheduled));
        return;
      }
    }
    // Fill the whole window, in writes of at most MAX_BATCH_BYTES (a large
    // value must not shrink the window to one request per read).
    while (count > 0) {
      const n = count < this.batchRequests ? count : this.batchRequests;
      this.writeRequests(n, now);
      count -= n;
    }
    if (this.intervalMs > 0 && source.remaining > 0 && this.inflight < this.pipeline) {
      this.wakeAt(this.dueAt(this.scheduled));
    }
  }

  /** --rate: when request k of this connection is due (connections are spread over the interval). */
  private dueAt(k: number): number {
    return this.startedAt + this.offsetMs + k * this.intervalMs;
  }

  /** Encodes n requests into a pooled buffer and writes them at once. */
  private writeRequests(n: number, now: number): void {
    const source = this.source;
    const out = this.freeBuffers.pop() ?? Buffer.allocUnsafe(this.batchRequests * this.prepared.maxRequestBytes);
    let pos = 0;
    for (let i = 0; i < n; i++) {
      const slot = this.tail;
      const request = source.next(out, pos);
      pos += request.len;
      this.ops[slot] = request.op;
      this.keyHashes[slot] = request.keyHash;
      this.keyIndexes[slot] = request.keyIndex;
      this.sentAt[slot] = now;
      if (this.intervalMs > 0) this.intendedAt[slot] = this.dueAt(this.scheduled++);
      this.tail = slot + 1 === this.pipeline ? 0 : slot + 1;
    }
    this.inflight += n;
    this.counters.bytesOut += pos;
    this.busyBuffers.push(out);
    this.socket.write(out.subarray(0, pos), this.onWritten);
  }

  /** Write callbacks come in order: the oldest buffer in use is free again. */
  private readonly onWritten = (): void => {
    const buf = this.busyBuffers.shift();
    if (buf !== undefined && this.freeBuffers.length < 4) this.freeBuffers.push(buf);
  };

  /** --rate: one timer at a time for the next due request (the deadline caps it). */
  private wakeAt(when: number): void {
    if (this.wakeup !== null || this.immediate !== null) return;
    const wait = Math.min(when, this.deadline) - performance.now();
    if (wait < 1) {
      // Node's timers tick in whole milliseconds: sooner than that, poll the
      // event loop instead, or every request would leave up to 1 ms late.
      this.immediate = setImmediate(this.onWake);
      return;
    }
    this.wakeup = setTimeout(this.onWake, wait - 0.5);
  }

  private readonly onWake = (): void => {
    this.wakeup = null;
    this.immediate = null;
    this.pump();
  };

  private onData(chunk: Buffer): void {
    if (this.done) return;
    const now = performance.now();
    this.counters.bytesIn += chunk.length;
    const reader = this.reader;
    reader.push(chunk);
    try {
      while (this.inflight > 0 && reader.pending() && reader.next()) this.onReply(reader.buf, now);
      if (reader.pending() && this.inflight === 0) {
        const at = reader.base + reader.pos;
        this.fail({
          kind: 'protocol',
          message: `${this.label()}: protocol error after ${this.received} replies: unexpected bytes with no request waiting, at byte ${at} of the replies: "${escapeBytes(reader.buf, reader.pos, reader.end)}"`,
        });
        return;
      }
      reader.keepRest();
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
    this.received++;
    const c = this.counters;
    if (this.histogram !== null) {
      if (this.intervalMs > 0) {
        this.histogram.record((now - this.intendedAt[slot]) * 1e6);
        this.serviceHistogram?.record((now - this.sentAt[slot]) * 1e6);
      } else this.histogram.record((now - this.sentAt[slot]) * 1e6);
      c.requests++;
    }
    const scanner = this.reader.scanner;
    const op = this.ops[slot];
    if (op === OP_SET) c.sets++;
    else c.gets++;
    if (scanner.kind === ReplyKind.Error) {
      c.errors++;
      if (c.firstError === null) c.firstError = buf.toString('latin1', scanner.payloadStart, scanner.payloadStart + Math.min(scanner.payloadLen, 200));
      return;
    }
    c.ok++;
    if (op !== OP_GET) return;
    if (scanner.kind === ReplyKind.Nil) {
      c.misses++;
      return;
    }
    if (!this.prepared.verify) return;
    const matches =
      scanner.kind === ReplyKind.Bulk &&
      this.prepared.values.matches(buf, scanner.payloadStart, scanner.payloadLen, this.keyHashes[slot]);
    if (!matches) {
      c.mismatches++;
      if (c.firstMismatch === null) c.firstMismatch = this.describeMismatch(buf, slot);
    }
  }

  private describeMismatch(buf: Buffer, slot: number): string {
    const key = this.prepared.keyText(this.keyIndexes[slot]);
    const expected = this.prepared.valueBytes(this.keyIndexes[slot]);
    const s = this.reader.scanner;
    const got = s.kind === ReplyKind.Bulk ? `"${escapeBytes(buf, s.payloadStart, s.payloadStart + s.payloadLen, 48)}"` : `a non-bulk reply "${escapeBytes(buf, s.payloadStart - 1, s.payloadStart + s.payloadLen + 2, 48)}"`;
    return `key ${key}: expected "${escapeBytes(expected, 0, expected.length, 48)}", got ${got}`;
  }

  /** Its share answered: close politely. */
  private complete(): void {
    this.end(null);
  }

  private fail(failure: Failure): void {
    this.end(failure);
  }

  /** Once only: stops the timers, closes the socket (at once on a failure) and reports. */
  private end(failure: Failure | null): void {
    if (this.done) return;
    this.done = true;
    if (this.wakeup) clearTimeout(this.wakeup);
    if (this.immediate) clearImmediate(this.immediate);
    if (failure) this.socket.destroy();
    else this.socket.end();
    this.finish(this.id, failure);
  }
}

