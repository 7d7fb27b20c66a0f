/**
 * One socket: the ring of its requests in flight (InFlight), its batched
 * writes and the one reply loop of the engine. Every socket a run opens is a
 * Link: a single server's, each node's of a --cluster client, a replica's
 * (--read-from), one a redirection opened. What a reply means beyond "the
 * oldest request's answer" is its owner's (Client) and the Tally's. Paired
 * with crates/respbench-core/src/link.rs.
 *
 * Writes: requests are encoded into `out` and handed to the kernel in one
 * write per flush. Only what the kernel takes is sent: a write it takes only
 * part of is waited for (its callback) before the next one goes, so a Link
 * holds at most one write in user space, plus what was encoded behind it.
 */
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Counters } from './counters.js';
import { InFlight } from './in-flight.js';
import type { Failure } from './plan.js';
import { escapeBytes, ProtocolError, ReplyKind, ReplyReader } from './reply.js';
import type { NodeTally, ReplySide, Tally } from './tally.js';
import { deliverEarly, takeReads } from './reads.js';
import { earlyErrors, peerLabel } from './transport.js';

/** Written behind a write the kernel did not take whole: its callback says when that one is out. */
const EMPTY_WRITE = Buffer.alloc(0);

/** What a Link tells its owner (the Client): the owner decides, the Link only reports. */
export interface LinkOwner {
  /** True once the client has ended: a Link then ignores its socket. */
  readonly ended: boolean;
  /** A batch of replies was counted, or a pending write completed: more may be sent. */
  pump(): void;
  /** The socket closed or failed (not one the Link has left). */
  linkClosed(link: Link, err: NodeJS.ErrnoException | null): void;
  fail(failure: Failure): void;
  /**
   * --cluster: entry `e` (already off the ring, its fields still readable)
   * was answered with an error reply; true when it was a redirection the
   * owner took over (the reply is not counted).
   */
  redirected(link: Link, e: number, reader: ReplyReader, now: number): boolean;
}

export class Link implements ReplySide {
  socket: net.Socket | null = null;
  /** host:port (or the socket path) of the peer, kept for messages after the socket is gone. */
  peer: string;
  /** The peer as bytes, to match a redirection's host:port without a string. */
  peerBytes: Buffer;
  readonly ring: InFlight;
  /**
   * Requests drawn from this Link's source not answered yet, wherever they
   * are (a redirection may have moved them to another Link): its share of
   * the client's window. Equal to ring.len on a single server.
   */
  charged = 0;
  /** Encoded requests not handed to the kernel yet, from 0. */
  out: Buffer;
  outLen = 0;
  /** The last view of `out` written: a steady flow of equal batches makes none. */
  private view: Buffer | null = null;
  /** A write the kernel has not wholly taken yet: `out[0, writingLen)`; what is encoded behind it waits. */
  writing = false;
  private writingLen = 0;
  private writesIssued = 0;
  private writesDone = 0;
  /** The socket reads into the shared buffer (reads.ts): plain TCP or unix, not TLS (whose writableLength stays above 0 after a write). */
  private plain = false;
  private reader = new ReplyReader();
  /** Replaced per socket: write callbacks of a socket the Link has left are ignored. */
  private onWritten: (err?: Error | null) => void = () => {};
  /** The socket is being opened (first use under --cluster, or --reconnect). */
  opening = false;
  /** Its side closed after the share was answered: waiting for the server's close. */
  closing = false;
  /** --reconnect: down with nothing to send, not being opened again until requests come for it. */
  parked = false;
  /** --reconnect: performance.now() when it dropped; -1 while up. */
  downSince = -1;
  retryTimer: NodeJS.Timeout | null = null;
  /** --reconnect: the replies counted when it was last opened again (-1: never), and the reopened sockets in a row closed before any reply. */
  repliesAtReopen = -1;
  silentReopens = 0;
  /** --cluster: a backoff's end for the requests waiting to be sent here again. */
  backoffTimer: NodeJS.Timeout | null = null;
  /** --cluster: requests waiting for a backoff to end before they are sent here (TRYAGAIN, a third hop); null otherwise. */
  readonly waiting: InFlight | null;

  constructor(
    private readonly owner: LinkOwner,
    /** Which client, for messages. */
    readonly clientId: number,
    /** Its place in the client's links (a ring entry's `origin`). */
    readonly index: number,
    /** Where it connects (host:port or the socket path). */
    target: string,
    /** Ring capacity: the window. */
    capacity: number,
    ringOf: (capacity: number) => InFlight,
    outBytes: number,
    private readonly counters: Counters,
    private readonly tally: Tally,
    /** --cluster, the measured phase: the row of the node it goes to (another after --reconnect opened it at another primary). */
    public node: NodeTally | null,
    /** --read-from: a replica's socket. */
    readonly replica: boolean,
    /** The client's links, for a re-sent request's window charge (null: every request on it is its own). */
    private readonly siblings: Link[] | null,
    /** --cluster: error replies may be redirections. */
    private readonly routed: boolean,
  ) {
    this.peer = target;
    this.peerBytes = Buffer.from(target, 'latin1');
    this.ring = ringOf(capacity);
    this.waiting = routed ? ringOf(4) : null;
    this.out = Buffer.allocUnsafe(outBytes);
  }

  /** Takes over an open socket (from openConnection); events of a socket it has left are ignored. */
  attach(socket: net.Socket): void {
    this.socket = socket;
    this.peer = peerLabel(socket) ?? this.peer;
    this.reader = new ReplyReader();
    this.writing = false;
    this.writingLen = 0;
    this.writesIssued = this.writesDone = 0;
    this.view = null;
    this.onWritten = (err?: Error | null) => this.written(socket, err);
    // A plain socket reads into the shared buffer (reads.ts); TLS emits 'data'.
    const into = (buf: Buffer, len: number) => {
      if (socket === this.socket) this.onData(buf, len);
    };
    this.plain = takeReads(socket, into);
    if (!this.plain) socket.on('data', (chunk: Buffer) => into(chunk, chunk.length));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (socket === this.socket) this.owner.linkClosed(this, err);
    });
    socket.on('close', () => {
      if (socket === this.socket) this.owner.linkClosed(this, null);
    });
    // openConnection leaves a socket that ran a handshake paused.
    socket.resume();
  }

  /**
   * After attach, once the owner can take a failure (a first start, a
   * reconnect, a Link a redirection opened): what the socket read before
   * the Link took it (a server's greeting, its error before a close) is
   * scanned as any reply is, and a socket that failed or closed before it
   * had listeners is reported to the owner (linkClosed). True when the Link
   * is up and its owner goes on.
   */
  begin(): boolean {
    const socket = this.socket!;
    deliverEarly(socket);
    if (this.owner.ended) return false;
    const early = earlyErrors.get(socket) as NodeJS.ErrnoException | undefined;
    if (early || socket.destroyed || socket.readyState !== 'open') {
      this.owner.linkClosed(this, early ?? null);
      return false;
    }
    return true;
  }

  /** Lets go of the socket (destroyed): its later events are ignored. Returns what was in flight on it. */
  detach(): number {
    const old = this.socket;
    if (old !== null) {
      old.removeAllListeners('data');
      old.on('error', () => {});
      old.destroy();
    }
    this.socket = null;
    const lost = this.ring.len;
    this.ring.clear();
    this.outLen = 0;
    this.writing = false;
    this.writingLen = 0;
    this.view = null;
    return lost;
  }

  /** Room for `len` more bytes in `out` (a larger buffer keeps what is there; a write under way keeps the old one). */
  reserve(len: number): void {
    if (this.outLen + len <= this.out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.outLen + len));
    this.out.copy(bigger, 0, 0, this.outLen);
    this.out = bigger;
    this.view = null;
  }

  /** Hands what is encoded to the kernel in one write, unless a write is pending or the socket is not up. */
  flush(): void {
    const socket = this.socket;
    if (this.writing || this.outLen === 0 || socket === null) return;
    const len = this.outLen;
    let view = this.view;
    if (view === null || view.length !== len) view = this.view = len === this.out.length ? this.out : this.out.subarray(0, len);
    if (!this.plain) {
      // TLS: Node counts what it encrypts as not yet taken, so the callback says when it is out.
      this.writesIssued++;
      socket.write(view, this.onWritten);
    } else socket.write(view);
    // Plain: no callback: one costs a tick and about 460 bytes of garbage per write (Node skips both for a write without one).
    // Node counts a write in writableLength until the kernel has all of it: 0 now means it took it in this call (the usual case).
    if (socket.writableLength === 0) {
      this.counters.bytesOut += len;
      this.outLen = 0;
    } else {
      this.writing = true;
      this.writingLen = len;
      // Told when it is all out: an empty write behind it, whose callback comes once the writes before it are done.
      if (this.plain) {
        this.writesIssued++;
        socket.write(EMPTY_WRITE, this.onWritten);
      }
    }
  }

  /** Write callbacks come in order: the last one issued completes the pending write. */
  private written(socket: net.Socket, err?: Error | null): void {
    if (socket !== this.socket) return;
    this.writesDone++;
    if (!this.writing || this.writesDone !== this.writesIssued) return;
    this.writing = false;
    // A failed write also emits 'error', which the owner handles.
    if (err || this.owner.ended) return;
    this.counters.bytesOut += this.writingLen;
    if (this.outLen > this.writingLen) this.out.copyWithin(0, this.writingLen, this.outLen);
    this.outLen -= this.writingLen;
    this.writingLen = 0;
    this.owner.pump();
  }

  /** Its share answered: a write still pending has reached the server (every request is answered), so it counts now. */
  settleWrite(): void {
    if (!this.writing) return;
    this.writing = false;
    this.counters.bytesOut += this.writingLen;
    this.outLen = 0;
    this.writingLen = 0;
  }

  /** Send time of the oldest request on it (sent or waiting for a backoff), or -1. */
  oldestSentAt(): number {
    let oldest = this.ring.len > 0 ? this.ring.sentAt[this.ring.peek()] : -1;
    const w = this.waiting;
    if (w !== null && w.len > 0) {
      const t = w.sentAt[w.peek()];
      if (oldest < 0 || t < oldest) oldest = t;
    }
    return oldest;
  }

  /** The one reply loop: each reply is the oldest entry's answer, counted by the Tally unless the owner takes it over. */
  private onData(chunk: Buffer, len: number): void {
    const owner = this.owner;
    if (owner.ended) return;
    const now = performance.now();
    this.counters.bytesIn += len;
    const reader = this.reader;
    const ring = this.ring;
    const tally = this.tally;
    reader.push(chunk, len);
    try {
      let at = reader.pos;
      while (reader.pending() && reader.next()) {
        const kind = reader.scanner.kind;
        if (kind === ReplyKind.Push) {
          // Out-of-band data (RESP3): no request's answer.
          this.counters.pushes++;
        } else if (ring.len === 0) {
          owner.fail({
            kind: 'protocol',
            message: `${this.label()}: protocol error after ${tally.received} replies: a reply no request asked for (the server sent more replies than requests, e.g. a greeting), at byte ${reader.base + at} of the replies: "${escapeBytes(reader.buf, at, reader.pos)}"`,
          });
          return;
        } else if (this.routed) {
          this.onRoutedReply(reader, now);
          if (owner.ended) return;
        } else {
          const e = ring.shift();
          this.charged--;
          tally.count(ring, e, reader, now, this);
          if (tally.fatal !== null) {
            owner.fail({ kind: 'auth', message: `${this.label()}: ${tally.fatal}` });
            return;
          }
        }
        at = reader.pos;
      }
      // Part of a reply with nothing waiting for it: only a push frame may come unasked.
      if (reader.pending() && ring.len === 0 && reader.buf[reader.pos] !== 62) {
        owner.fail({
          kind: 'protocol',
          message: `${this.label()}: protocol error after ${tally.received} replies: unexpected bytes with no request waiting, at byte ${reader.base + reader.pos} of the replies: "${escapeBytes(reader.buf, reader.pos, reader.end)}"`,
        });
        return;
      }
      reader.keepRest();
      owner.pump();
    } catch (err) {
      if (err instanceof ProtocolError) {
        owner.fail({
          kind: 'protocol',
          message: `${this.label()}: protocol error after ${tally.received} replies: ${err.reason} at byte ${reader.base + err.offset} of the replies: "${err.bytes}"`,
        });
        return;
      }
      // A bug here must still end the run with the counters so far, not an uncaught exception.
      owner.fail({ kind: 'internal', message: `${this.label()}: internal error after ${tally.received} replies: ${(err as Error)?.message ?? String(err)}` });
    }
  }

  /** --cluster: ASKING's +OK is skipped; a redirection goes to the owner; the window charge goes back to the Link the request was drawn for. */
  private onRoutedReply(reader: ReplyReader, now: number): void {
    const ring = this.ring;
    const first = ring.peek();
    if (ring.asking[first] === 1) {
      // ASKING's own +OK; the request's reply comes next.
      ring.asking[first] = 0;
      return;
    }
    const e = ring.shift();
    if (reader.scanner.kind === ReplyKind.Error && this.owner.redirected(this, e, reader, now)) return;
    this.siblings![ring.origin[e]].charged--;
    this.tally.count(ring, e, reader, now, this);
    if (this.tally.fatal !== null) this.owner.fail({ kind: 'auth', message: `${this.label()}: ${this.tally.fatal}` });
  }

  /** Names the link in messages: which client, and to where. */
  /** Replies its client has counted (the Tally's): a reopened socket that brings none is a silent reopen. */
  get replies(): number {
    return this.tally.received;
  }

  label(): string {
    return `connection ${this.clientId} (${this.peer})`;
  }

  /** Says how much of an unfinished reply had arrived, if any, for messages. */
  partialNote(): string {
    const partial = this.reader.partialLength;
    return partial > 0 ? `, in the middle of a reply (${partial} bytes of it received: "${this.reader.describePartial()}")` : '';
  }

  /** Why the server's side went away. */
  closedText(err: NodeJS.ErrnoException | null): string {
    const midReply = this.partialNote();
    const received = this.tally.received;
    if (err === null) return `${this.label()}: connection closed by server after ${received} replies${midReply}`;
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'ECONNABORTED') {
      return `${this.label()}: connection closed by server after ${received} replies (${err.code === 'ECONNRESET' ? 'reset' : err.code})${midReply}`;
    }
    return `${this.label()}: ${err.message} after ${received} replies${midReply}`;
  }
}
