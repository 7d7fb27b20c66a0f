/**
 * A reply counted against the request it answers: the counters, --verify-get's
 * checks (single values and MGET arrays), the latency histograms per command,
 * per node (--cluster) and per interval (IntervalClock). Knows nothing of
 * sockets: a Link hands it the reply and the request's ring entry. Paired
 * with crates/respbench-core/src/tally.rs.
 */
import { performance } from 'node:perf_hooks';
import type { Counters } from './counters.js';
import { fatalReplyText } from './handshake.js';
import { LatencyHistogram, OpHistograms, valueAtPercentileOf } from './histogram.js';
import type { InFlight } from './in-flight.js';
import type { RawInterval } from './plan.js';
import { escapeBytes, ReplyKind, type ReplyReader } from './reply.js';
import { OP_GET, OP_SET, type PreparedPlan } from './request-source.js';
import { firstDifference } from './values.js';

/** --cluster: what the measured phase counts per primary (RawNode). */
export interface NodeTally {
  requests: number;
  errors: number;
  redirections: number;
  histogram: LatencyHistogram;
}

/**
 * --cluster, the measured phase: its per-node rows, the plan's primaries
 * first (ClusterPlan.nodes order), then each node that joined mid-run, made
 * when a client first opens a Link to it.
 */
export interface NodeRows {
  /** `host:port` of each row. */
  labels: string[];
  tallies: NodeTally[];
}

/** Where a reply came from, as far as counting it goes. */
export interface ReplySide {
  /** --cluster, the measured phase: the row of the node that answered. */
  node: NodeTally | null;
  /** --read-from: a replica answered (a nil for a written key is a stale read, not a lost write). */
  replica: boolean;
}

/**
 * One client's reply counting over a phase's shared counters and
 * histograms. `fatal` is set by a NOAUTH or NOPERM reply (the requests after
 * it would all be answered the same way): the Link ends the run on it.
 */
export class Tally {
  /** Replies counted (for messages and progress). */
  received = 0;
  /** The reason the run must end now, once an error reply said so. */
  fatal: string | null = null;
  /** --rate: latency from the intended send; the service histogram gets the actual one. */
  private readonly rated: boolean;

  constructor(
    private readonly prepared: PreparedPlan,
    readonly counters: Counters,
    /** The measured phase only: preload and warmup replies are counted, not timed. */
    private readonly histogram: OpHistograms | null,
    /** --rate: latency from the actual send, beside the main one from the intended send. */
    private readonly serviceHistogram: LatencyHistogram | null,
  ) {
    this.rated = serviceHistogram !== null;
  }

  /** Counts one reply (the reader's current one) against entry `e` of `req`. */
  count(req: InFlight, e: number, reader: ReplyReader, now: number, side: ReplySide): void {
    const buf = reader.buf;
    const scanner = reader.scanner;
    const prepared = this.prepared;
    const commandIndex = req.command[e];
    const command = prepared.commands[commandIndex];
    const op = command.op;
    this.received++;
    const c = this.counters;
    if (this.histogram !== null) {
      const sentAt = req.sentAt[e];
      const intended = req.intended.length > 0 ? req.intended[e] : sentAt;
      const latencyNs = (now - intended) * 1e6;
      this.histogram.byCommand[commandIndex].record(latencyNs);
      if (this.rated) this.serviceHistogram!.record((now - sentAt) * 1e6);
      c.requests++;
      const node = side.node;
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
      this.checkFatal(buf, scanner.payloadStart, scanner.payloadLen);
      return;
    }
    const written = prepared.written;
    if (op !== OP_GET) {
      c.ok++;
      // Only a write of the key's value makes a later read of it find one (not INCR, LPUSH, …).
      if (command.kind === 'write' && written !== null) {
        const keyCount = command.encoder.keyCount;
        if (keyCount === 1) written.add(req.keyIndex[e]);
        else for (let k = 0; k < keyCount; k++) written.add(req.keys[e * req.maxKeys + k]);
      }
      return;
    }
    if (command.arrayReply) {
      this.countArrayReply(reader, req, e, command.encoder.keyCount, side.replica);
      return;
    }
    if (scanner.kind === ReplyKind.Nil) {
      const writtenBefore = written !== null && req.written[e] === 1;
      // A replica may not have a write yet (replication lag): stale, not lost.
      if (side.replica && (writtenBefore || prepared.missFailsVerify)) {
        c.staleReads++;
        c.ok++;
      }
      // A key whose write was acknowledged before this read went out must be there.
      else if (writtenBefore) c.lostWrites++;
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
    if ((kind === ReplyKind.Bulk || kind === ReplyKind.Verbatim) && prepared.values.matches(buf, scanner.payloadStart, scanner.payloadLen, req.keyHash[e])) {
      c.ok++;
      return;
    }
    c.mismatches++;
    if (c.firstMismatch === null) c.firstMismatch = this.describeMismatch(reader, req.keyIndex[e]);
  }

  /**
   * --cluster: a request redirected or retried until it was given up: the
   * last answer counts as the error reply it is, with `text` as its reason.
   */
  countGivenUp(req: InFlight, e: number, text: string, node: NodeTally | null): void {
    const c = this.counters;
    c.errors++;
    if (this.histogram !== null) {
      c.requests++;
      if (node !== null) {
        node.requests++;
        node.errors++;
      }
    }
    if (req.op[e] === OP_SET) c.sets++;
    else c.gets++;
    this.received++;
    if (c.firstError === null) c.firstError = text;
  }

  /**
   * A read answered with one value per key (MGET): each element is checked
   * against its key's value (--verify-get). The request counts once: a
   * mismatch if any key's value differs (the first one described), else a
   * miss if any key was nil, else ok.
   */
  private countArrayReply(reader: ReplyReader, req: InFlight, e: number, keyCount: number, replica: boolean): void {
    const c = this.counters;
    const prepared = this.prepared;
    const buf = reader.buf;
    const s = reader.scanner;
    const keyAt = (k: number) => (keyCount === 1 ? req.keyIndex[e] : req.keys[e * req.maxKeys + k]);
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
    else if (replica && prepared.missFailsVerify) {
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

  /** NOAUTH or NOPERM (handshake.ts fatalReplyText) ends the run at once. */
  private checkFatal(buf: Buffer, start: number, len: number): void {
    const b = buf[start];
    if (b !== 0x4e || len < 6) return; // 'N'
    const text = buf.toString('latin1', start, start + Math.min(len, 200));
    const why = fatalReplyText(text, this.prepared.plan.user);
    if (why !== null) this.fatal = `${why} after ${this.received} replies`;
  }

  /**
   * `key K: …` with both lengths and the first byte that differs, both sides
   * shown from a little before it (two 1 MiB values differing at byte 900,000
   * show that byte, not two equal prefixes). Worded as the native engine.
   */
  private describeMismatch(reader: ReplyReader, keyIndex: number): string {
    const buf = reader.buf;
    const s = reader.scanner;
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
}

/**
 * The measured phase's time series: the clients record into `current`,
 * which holds the current interval only; at each boundary (a timer) it is
 * added to the phase's histograms, written into a RawInterval and emptied.
 * No work per reply. Paired with IntervalClock in crates/respbench-core/src/tally.rs.
 */
export class IntervalClock {
  readonly intervals: RawInterval[] = [];
  private index = 0;
  private before: Counters;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    /** The phase's latencies so far, the current interval apart. */
    readonly phase: OpHistograms,
    private readonly everyMs: number,
    private readonly start: number,
    private readonly counters: Counters,
    private readonly current: OpHistograms,
    private readonly onInterval: ((i: RawInterval) => void) | undefined,
    /** Connections open now (they only grow under --ramp-connections). */
    private readonly openNow: () => number,
    /** A command mix: each interval carries each command's latencies. */
    private readonly perCommand = false,
  ) {
    this.before = { ...counters };
    this.schedule();
  }

  private schedule(): void {
    const due = this.start + (this.index + 1) * this.everyMs;
    this.timer = setTimeout(() => {
      this.cut(performance.now());
      this.schedule();
    }, Math.max(0, due - performance.now()));
  }

  /** Ends the current interval at `now`; intervals a late timer slept through are recorded empty. */
  private cut(now: number): void {
    const c = this.counters;
    const b = this.before;
    const at = (i: number) => i * this.everyMs * 1e6;
    this.emit({
      index: this.index,
      startNs: at(this.index),
      endNs: Math.min(Math.round((now - this.start) * 1e6), at(this.index + 1)),
      requests: c.requests - b.requests,
      sets: c.sets - b.sets,
      gets: c.gets - b.gets,
      errors: c.errors - b.errors,
      misses: c.misses - b.misses,
      mismatches: c.mismatches - b.mismatches,
      lostWrites: c.lostWrites - b.lostWrites,
      setHistogram: this.current.set.toData(),
      getHistogram: this.current.get.toData(),
      ...(this.perCommand ? { commandHistograms: this.current.byCommand.map((h) => h.toData()) } : {}),
      connections: this.openNow(),
    });
    this.phase.merge(this.current);
    this.current.reset();
    this.before = { ...c };
    this.index++;
    const empty = () => ({ unit: 'ns' as const, significantDigits: 3 as const, buckets: [] });
    while (this.start + (this.index + 1) * this.everyMs <= now) {
      const commandHistograms = this.perCommand ? { commandHistograms: this.current.byCommand.map(empty) } : {};
      this.emit({ index: this.index, startNs: at(this.index), endNs: at(this.index + 1), requests: 0, sets: 0, gets: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: empty(), getHistogram: empty(), ...commandHistograms, connections: this.openNow() });
      this.index++;
    }
  }

  private emit(i: RawInterval): void {
    this.intervals.push(i);
    this.onInterval?.(i);
  }

  /** p99 of the phase so far (the intervals cut and the current one), for the progress line. */
  p99(): number {
    return valueAtPercentileOf([...this.phase.byCommand, ...this.current.byCommand], 99);
  }

  /** The last interval cut at the end, and the phase's latencies back in `current`. */
  finish(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.cut(now);
    this.current.merge(this.phase);
  }
}
