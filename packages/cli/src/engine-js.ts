/**
 * The pure TypeScript engine over node:net: how requests are sent and replies
 * counted. What to send comes from request-source.ts; the native engine does
 * the same work in Rust with the same traffic.
 *
 * Per connection, a ring of `pipeline` slots holds what each in-flight request
 * needs when its reply arrives (kind, key hash, key index, send time) in typed
 * arrays, so a reply costs no allocation. Requests go out in one write per
 * batch; a batch is whatever the window allows after each read.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Histogram } from './histogram.js';
import type { Engine, Failure, Plan, RawResult, RunOptions } from './plan.js';
import { escapeBytes, ProtocolError, ReplyKind, ReplyReader } from './resp.js';
import { OP_GET, OP_SET, RequestSource, Workload } from './request-source.js';

/** Bytes of requests encoded into one write at most (a larger value makes a larger write). */
const MAX_BATCH_BYTES = 256 * 1024;

interface Counters {
  requests: number;
  sets: number;
  gets: number;
  ok: number;
  errors: number;
  misses: number;
  mismatches: number;
  bytesOut: number;
  bytesIn: number;
  firstError: string | null;
  firstMismatch: string | null;
}

function newCounters(): Counters {
  return { requests: 0, sets: 0, gets: 0, ok: 0, errors: 0, misses: 0, mismatches: 0, bytesOut: 0, bytesIn: 0, firstError: null, firstMismatch: null };
}

/**
 * Opens a connection and makes it ready for load. The one place that will
 * grow TLS, unix sockets and a handshake (AUTH, SELECT, HELLO).
 */
export function openConnection(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<net.Socket> {
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
      // Until a ConnectionRunner takes the socket over (the other connections
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

/** Errors on open sockets that no ConnectionRunner listened to yet. */
const earlyErrors = new WeakMap<net.Socket, Error>();

/** Ctrl-C or SIGTERM while connections were opening. */
class ConnectInterrupted extends Error {
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

/** Drives one connection through its share of one phase. */
class ConnectionRunner {
  private readonly kinds: Uint8Array;
  private readonly keyHashes: Uint32Array;
  private readonly keyIndexes: Float64Array;
  private readonly sentAt: Float64Array;
  /** --rate: when each request was due; latency counts from here. */
  private readonly intendedAt: Float64Array;
  /** --rate: requests given a due time so far, and the gap between two (ms). */
  private scheduled = 0;
  private readonly intervalMs: number;
  /** --rate: this connection's place in the interval, so connections do not fire together. */
  private readonly offsetMs: number;
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
  received = 0;

  constructor(
    readonly id: number,
    private readonly socket: net.Socket,
    private readonly source: RequestSource,
    private readonly workload: Workload,
    private readonly counters: Counters,
    private readonly histogram: Histogram | null,
    private readonly serviceHistogram: Histogram | null,
    private readonly pipeline: number,
    /** performance.now() after which no request is sent (time-bound phases), else Infinity. */
    private readonly deadline: number,
    rate: number,
    connections: number,
    private readonly finish: (id: number, failure: Failure | null) => void,
  ) {
    this.intervalMs = rate > 0 ? (1000 * connections) / rate : 0;
    this.offsetMs = rate > 0 ? (1000 * id) / rate : 0;
    const perRequest = workload.maxRequestBytes;
    this.batchRequests = Math.max(1, Math.min(pipeline, Math.floor(MAX_BATCH_BYTES / perRequest)));
    this.intendedAt = new Float64Array(this.intervalMs > 0 ? pipeline : 0);
    this.kinds = new Uint8Array(pipeline);
    this.keyHashes = new Uint32Array(pipeline);
    this.keyIndexes = new Float64Array(pipeline);
    this.sentAt = new Float64Array(pipeline);
    this.peer = socket.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : null;
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
    const out = this.freeBuffers.pop() ?? Buffer.allocUnsafe(this.batchRequests * this.workload.maxRequestBytes);
    let pos = 0;
    for (let i = 0; i < n; i++) {
      const slot = this.tail;
      pos += source.next(out, pos);
      this.kinds[slot] = source.lastKind;
      this.keyHashes[slot] = source.lastKeyHash;
      this.keyIndexes[slot] = source.lastKeyIndex;
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
          message: `${this.where()}: protocol error after ${this.received} replies: unexpected bytes with no request waiting, at byte ${at} of the replies: "${escapeBytes(reader.buf, reader.pos, reader.end)}"`,
        });
        return;
      }
      reader.keepRest();
      this.pump();
    } catch (err) {
      if (err instanceof ProtocolError) {
        this.fail({
          kind: 'protocol',
          message: `${this.where()}: protocol error after ${this.received} replies: ${err.reason} at byte ${reader.base + err.offset} of the replies: "${err.bytes}"`,
        });
        return;
      }
      // A bug here must still end the run with the counters so far, not an uncaught exception.
      this.fail({ kind: 'internal', message: `${this.where()}: internal error after ${this.received} replies: ${(err as Error)?.message ?? String(err)}` });
    }
  }

  label(): string {
    return this.where();
  }

  /** Names the connection in messages: which one, and to where. */
  private where(): string {
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
    if (err === null) return `${this.where()}: connection closed by server after ${this.received} replies${midReply}`;
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ECONNABORTED') {
      return `${this.where()}: connection closed by server after ${this.received} replies (${err.code === 'ECONNRESET' ? 'reset' : err.code})${midReply}`;
    }
    return `${this.where()}: ${err.message} after ${this.received} replies${midReply}`;
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
    const kind = this.kinds[slot];
    if (kind === OP_SET) c.sets++;
    else c.gets++;
    if (scanner.kind === ReplyKind.Error) {
      c.errors++;
      if (c.firstError === null) c.firstError = buf.toString('latin1', scanner.payloadStart, scanner.payloadStart + Math.min(scanner.payloadLen, 200));
      return;
    }
    c.ok++;
    if (kind !== OP_GET) return;
    if (scanner.kind === ReplyKind.Nil) {
      c.misses++;
      return;
    }
    if (!this.workload.verify) return;
    const matches =
      scanner.kind === ReplyKind.Bulk &&
      this.workload.values.matches(buf, scanner.payloadStart, scanner.payloadLen, this.keyHashes[slot]);
    if (!matches) {
      c.mismatches++;
      if (c.firstMismatch === null) c.firstMismatch = this.describeMismatch(buf, slot);
    }
  }

  private describeMismatch(buf: Buffer, slot: number): string {
    const key = this.workload.keyText(this.keyIndexes[slot]);
    const expected = this.workload.valueText(this.keyIndexes[slot]);
    const s = this.reader.scanner;
    const got = s.kind === ReplyKind.Bulk ? `"${escapeBytes(buf, s.payloadStart, s.payloadStart + s.payloadLen, 48)}"` : `a non-bulk reply "${escapeBytes(buf, s.payloadStart - 1, s.payloadStart + s.payloadLen + 2, 48)}"`;
    return `key ${key}: expected "${escapeBytes(expected, 0, expected.length, 48)}", got ${got}`;
  }

  private complete(): void {
    if (this.done) return;
    this.done = true;
    if (this.wakeup) clearTimeout(this.wakeup);
    if (this.immediate) clearImmediate(this.immediate);
    this.socket.end();
    this.finish(this.id, null);
  }

  private fail(failure: Failure): void {
    if (this.done) return;
    this.done = true;
    if (this.wakeup) clearTimeout(this.wakeup);
    if (this.immediate) clearImmediate(this.immediate);
    this.socket.destroy();
    this.finish(this.id, failure);
  }
}

interface PhaseOutcome {
  elapsedNs: number;
  failure: Failure | null;
}

/** Runs one phase (preload or timed) over fresh connections. */
async function runPhase(
  plan: Plan,
  workload: Workload,
  phase: 'preload' | 'warmup' | 'run',
  counters: Counters,
  histogram: Histogram | null,
  serviceHistogram: Histogram | null,
  options: RunOptions,
): Promise<PhaseOutcome> {
  const durationMs = phase === 'warmup' ? plan.warmupMs : phase === 'run' ? plan.durationMs : 0;
  const sockets: net.Socket[] = [];
  try {
    for (let c = 0; c < plan.connections; c++) {
      sockets.push(await openConnection(plan.host, plan.port, plan.timeoutMs > 0 ? plan.timeoutMs : 10_000, options.signal));
    }
  } catch (err) {
    for (const s of sockets) s.destroy();
    if (err instanceof ConnectInterrupted) return { elapsedNs: 0, failure: { kind: 'interrupted', message: err.message } };
    return { elapsedNs: 0, failure: { kind: 'connect', message: (err as Error).message } };
  }
  return new Promise<PhaseOutcome>((resolve) => {
    const runners: ConnectionRunner[] = [];
    let open = plan.connections;
    let failure: Failure | null = null;
    const start = performance.now();
    let timer: NodeJS.Timeout | null = null;
    const onAbort = () => stopAll({ kind: 'interrupted', message: 'interrupted' });
    const finish = (_id: number, f: Failure | null) => {
      if (f && !failure) {
        failure = f;
        stopAll(f);
      }
      open--;
      if (open === 0) {
        const elapsedNs = (performance.now() - start) * 1e6;
        if (timer) clearInterval(timer);
        options.signal?.removeEventListener('abort', onAbort);
        resolve({ elapsedNs, failure });
      }
    };
    const stopAll = (f: Failure) => {
      for (const r of runners) r.stop(f);
    };
    const deadline = durationMs > 0 ? start + durationMs : Infinity;
    const rate = phase === 'preload' ? 0 : plan.rate;
    for (let c = 0; c < plan.connections; c++) {
      const source = phase === 'preload' ? workload.preloadSource(c) : workload.runSource(c, durationMs > 0);
      runners.push(new ConnectionRunner(c, sockets[c], source, workload, counters, histogram, serviceHistogram, plan.pipeline, deadline, rate, plan.connections, finish));
    }
    const timeoutMs = plan.timeoutMs;
    timer = setInterval(() => {
      const now = performance.now();
      if (timeoutMs > 0) {
        for (const r of runners) {
          const oldest = r.oldestSentAt();
          if (oldest >= 0 && now - oldest > timeoutMs) {
            r.stop({ kind: 'timeout', message: `${r.label()}: no reply within ${timeoutMs} ms (--timeout) after ${r.received} replies${r.partialNote()}` });
          }
        }
      }
      if (options.onProgress) {
        let done = 0;
        for (const r of runners) done += r.received;
        const total = durationMs > 0 ? 0 : phase === 'run' ? plan.requests : workload.preloadTotal;
        options.onProgress({ done, total, errors: counters.errors, elapsedNs: (now - start) * 1e6, phase, durationNs: durationMs * 1e6 });
      }
    }, timeoutMs > 0 ? Math.min(250, Math.max(10, timeoutMs / 4)) : 250);
    timer.unref();
    if (options.signal) {
      if (options.signal.aborted) queueMicrotask(onAbort);
      else options.signal.addEventListener('abort', onAbort, { once: true });
    }
    for (const r of runners) r.start();
  });
}

export const jsEngine: Engine = {
  name: 'js',
  async run(plan: Plan, options: RunOptions = {}): Promise<RawResult> {
    const workload = new Workload(plan);
    const preloadCounters = newCounters();
    const counters = newCounters();
    const histogram = new Histogram();
    let preloadElapsedNs = 0;
    let failure: Failure | null = null;
    if (workload.preloadTotal > 0) {
      const pre = await runPhase(plan, workload, 'preload', preloadCounters, null, null, options);
      preloadElapsedNs = pre.elapsedNs;
      if (pre.failure) failure = { kind: pre.failure.kind, message: `preload: ${pre.failure.message}` };
      else if (preloadCounters.errors > 0) failure = { kind: 'preload', message: `preload: the server answered ${preloadCounters.errors} writes with errors, first: ${preloadCounters.firstError}` };
    }
    const warmupCounters = newCounters();
    let warmupElapsedNs = 0;
    if (!failure && plan.warmupMs > 0) {
      const warm = await runPhase(plan, workload, 'warmup', warmupCounters, null, null, options);
      warmupElapsedNs = warm.elapsedNs;
      if (warm.failure) failure = { kind: warm.failure.kind, message: `warmup: ${warm.failure.message}` };
    }
    const serviceHistogram = plan.rate > 0 ? new Histogram() : null;
    let elapsedNs = 0;
    if (!failure) {
      const outcome = await runPhase(plan, workload, 'run', counters, histogram, serviceHistogram, options);
      elapsedNs = outcome.elapsedNs;
      failure = outcome.failure;
    }
    return {
      engine: 'js',
      requests: counters.requests,
      sets: counters.sets,
      gets: counters.gets,
      ok: counters.ok,
      errors: counters.errors,
      misses: counters.misses,
      mismatches: counters.mismatches,
      bytesOut: counters.bytesOut,
      bytesIn: counters.bytesIn,
      elapsedNs,
      histogram: histogram.toData(),
      preloadRequests: preloadCounters.sets,
      preloadElapsedNs,
      warmupRequests: warmupCounters.sets + warmupCounters.gets,
      warmupElapsedNs,
      serviceHistogram: serviceHistogram ? serviceHistogram.toData() : null,
      firstError: counters.firstError ?? (failure ? preloadCounters.firstError : null),
      firstMismatch: counters.firstMismatch,
      failure,
    };
  },
};
