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
import type { Failure } from './plan.js';
import { escapeBytes, ProtocolError, ReplyKind, ReplyReader } from './reply.js';
import { OP_GET, OP_SET, type PreparedPlan, type RequestSource } from './request-source.js';
import { firstDifference } from './values.js';

/** Bytes of requests encoded into one write at most (a larger value makes a larger write). */
const MAX_BATCH_BYTES = 256 * 1024;

/**
 * How long a connection whose share is answered waits, after closing its
 * side, for the server to close its own: a reply arriving then is one no
 * request asked for (a greeting shifted every reply by one). Redis closes at
 * once; a server that keeps its side open costs the phase this much.
 */
export const CLOSE_WAIT_MS = 200;

/**
 * Opens a connection and makes it ready for load: the one place that does,
 * for every phase. Another transport (TLS, unix sockets) goes in `dial`; a
 * handshake (AUTH, HELLO, SELECT) goes here, between the dial and handing the
 * socket to a Connection. Rejects with ConnectInterrupted when `signal`
 * aborts, with a user-facing message otherwise.
 */
export async function openConnection(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  const socket = await dial(host, port, timeoutMs, signal);
  // No handshake yet: a fresh TCP connection is ready as it is.
  return socket;
}

/** The transport: a TCP connection with Nagle off, within `timeoutMs`. */
function dial(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ConnectInterrupted());
    const socket = net.connect({ host, port, noDelay: true });
    const settle = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      settle();
      socket.destroy();
      reject(new ConnectInterrupted());
    };
    const timer = timeoutMs > 0 ? setTimeout(() => {
      settle();
      socket.destroy();
      reject(new Error(`connect to ${host}:${port} timed out after ${timeoutMs} ms`));
    }, timeoutMs) : null;
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.once('connect', () => {
      settle();
      socket.removeAllListeners('error');
      // Until a Connection takes the socket over (the other connections
      // are still opening), an error must be kept, not thrown as uncaught.
      socket.on('error', (err) => {
        if (!earlyErrors.has(socket)) earlyErrors.set(socket, err);
      });
      resolve(socket);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      settle();
      reject(new Error(connectErrorText(host, port, err)));
    });
  });
}

/** Errors on open sockets that no Connection listened to yet. */
const earlyErrors = new WeakMap<net.Socket, Error>();

/** Ctrl-C or SIGTERM while connections were opening. */
export class ConnectInterrupted extends Error {
  constructor() {
    super('interrupted while connecting');
  }
}

function connectErrorText(host: string, port: number, err: NodeJS.ErrnoException): string {
  if (err.code === 'ECONNREFUSED') return `connection refused by ${host}:${port} (is the server running on that port?)`;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `cannot resolve host "${host}"`;
  if (err.code === 'EMFILE' || err.code === 'ENFILE') {
    return `cannot open another connection to ${host}:${port}: the open-file limit is too low for this many connections (raise it, e.g. ulimit -n 65536, or use fewer -c)`;
  }
  return `cannot connect to ${host}:${port}: ${err.message}`;
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
  /** Reads sent after their key's write was acknowledged (--verify-get, mixed): nil then is a lost write. */
  private readonly writtenBefore: Uint8Array;
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
  /** host:port of the server, kept for messages written after the socket is gone. */
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
    this.writtenBefore = new Uint8Array(o.prepared.written !== null ? pipeline : 0);
    const socket = o.socket;
    this.peer = socket.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : null;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.awaitingClose) this.end(null);
      else this.fail({ kind: 'closed', message: this.closedText(err) });
    });
    socket.on('close', () => {
      if (this.awaitingClose) this.end(null);
      else if (!this.done) this.fail({ kind: 'closed', message: this.closedText(null) });
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
    if (this.done || this.awaitingClose) return;
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
      if (this.prepared.written !== null) this.writtenBefore[slot] = request.op === OP_GET && this.prepared.written.has(request.keyIndex) ? 1 : 0;
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
        } else this.onReply(reader.buf, now);
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
    const prepared = this.prepared;
    if (op !== OP_GET) {
      c.ok++;
      prepared.written?.add(this.keyIndexes[slot]);
      return;
    }
    if (scanner.kind === ReplyKind.Nil) {
      // A key whose write was acknowledged before this read went out must be there.
      if (prepared.written !== null && this.writtenBefore[slot] === 1) c.lostWrites++;
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
    if ((kind === ReplyKind.Bulk || kind === ReplyKind.Verbatim) && prepared.values.matches(buf, scanner.payloadStart, scanner.payloadLen, this.keyHashes[slot])) {
      c.ok++;
      return;
    }
    c.mismatches++;
    if (c.firstMismatch === null) c.firstMismatch = this.describeMismatch(buf, slot);
  }

  /**
   * `key K: …` with both lengths and the first byte that differs, both sides
   * shown from a little before it (two 1 MiB values differing at byte 900,000
   * show that byte, not two equal prefixes). Worded as the native engine.
   */
  private describeMismatch(buf: Buffer, slot: number): string {
    const key = this.prepared.keyText(this.keyIndexes[slot]);
    const expected = this.prepared.valueBytes(this.keyIndexes[slot]);
    const s = this.reader.scanner;
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
    this.awaitingClose = true;
    this.answeredAt = performance.now();
    if (this.wakeup) clearTimeout(this.wakeup);
    if (this.immediate) clearImmediate(this.immediate);
    this.wakeup = null;
    this.immediate = null;
    this.socket.end();
    this.closeWaitTimer = setTimeout(() => this.end(null), CLOSE_WAIT_MS);
  }

  private fail(failure: Failure): void {
    this.end(failure);
  }

  /** Once only: stops the timers, closes the socket (at once on a failure) and reports. */
  private end(failure: Failure | null): void {
    if (this.done) return;
    this.done = true;
    const waited = this.awaitingClose;
    this.awaitingClose = false;
    if (this.wakeup) clearTimeout(this.wakeup);
    if (this.immediate) clearImmediate(this.immediate);
    if (this.closeWaitTimer) clearTimeout(this.closeWaitTimer);
    // After the close wait every request was answered, so nothing unsent is lost.
    if (failure || waited) this.socket.destroy();
    else this.socket.end();
    this.finish(this.id, failure);
  }
}

