/**
 * A reply counted against the request it answers: the counters, --verify-get's
 * checks (single values and MGET arrays), the latency histograms per command,
 * per node (--cluster) and per interval (IntervalClock). Knows nothing of
 * sockets: a Link hands it the reply and the request's ring entry. Paired
 * with crates/respbench-core/src/tally.rs.
 */
import { newCounters, type Counters } from './counters.js';
import { fatalReplyText } from './handshake.js';
import { COUNTS_LENGTH, LatencyHistogram, OpHistograms, valueAtPercentileOf } from './histogram.js';
import type { InFlight } from './in-flight.js';
import { EMPTY_PACKED, PackedWriter } from './packed-histogram.js';
import { nodeLabel, type Plan, type RawInterval } from './plan.js';
import { escapeBytes, ReplyKind, type ReplyReader } from './reply.js';
import { OP_GET, OP_SET, type PreparedPlan } from './request-source.js';
import { contentOf, firstDifference, generationOf } from './values.js';

/** What a read's value is, against the floor it was sent with: fresh, not a value of the key, or a value of generation `got` older than `wrote`. */
const FRESH = 0;
const WRONG = 1;
type Verdict = typeof FRESH | typeof WRONG | { got: number; wrote: number };

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

/**
 * --cluster: the tally of the per-node row a reply from `target` counts in:
 * the primary's it is, or the primary's it is a replica of (a failover
 * promotes one: the shard's row); a node the plan does not name joined
 * mid-run and gets a row of its own, made on first use (shared by the
 * phase's clients, as the native engine's Tally.joined_row). Null outside
 * the measured phase (no rows).
 */
export function nodeTallyOf(plan: Plan, rows: NodeRows | null, target: string): NodeTally | null {
  if (rows === null) return null;
  const cluster = plan.cluster;
  if (cluster) {
    for (let i = 0; i < cluster.nodes.length; i++) {
      if (nodeLabel(cluster.nodes[i]) === target) return rows.tallies[i];
      for (const r of cluster.replicas?.[i] ?? []) if (nodeLabel(r) === target) return rows.tallies[i];
    }
  }
  const joined = rows.labels.indexOf(target);
  if (joined >= 0) return rows.tallies[joined];
  const tally = { requests: 0, errors: 0, redirections: 0, histogram: new LatencyHistogram() };
  rows.labels.push(target);
  rows.tallies.push(tally);
  return tally;
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
  /** --cluster: of those, requests given up after redirections (no node answered them). */
  givenUp = 0;
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
    const names = prepared.keyNames;
    if (scanner.kind === ReplyKind.Error) {
      c.errors++;
      if (c.firstError === null) c.firstError = buf.toString('latin1', scanner.payloadStart, scanner.payloadStart + Math.min(scanner.payloadLen, 200));
      this.checkFatal(buf, scanner.payloadStart, scanner.payloadLen);
      // Refused: not written, but no longer in flight (a later write of its keys may raise their floor).
      if (names !== null && op !== OP_GET) names.onWriteAnswered(req.command[e], req.keyIndex[e], req.keys, e * req.maxKeys, command.encoder.keyCount, req.generation[e], false);
      return;
    }
    if (op !== OP_GET) {
      c.ok++;
      // Only a write of the key's value makes a later read of its name find one (not INCR, LPUSH, …).
      // A conditional write (SETNX, SET … NX/XX) may answer that it wrote nothing.
      if (names !== null) {
        const wrote = names.wrote(req.command[e], scanner.kind, buf, scanner.payloadStart, scanner.payloadLen);
        names.onWriteAnswered(req.command[e], req.keyIndex[e], req.keys, e * req.maxKeys, command.encoder.keyCount, req.generation[e], wrote);
      }
      return;
    }
    if (command.arrayReply) {
      this.countArrayReply(reader, req, e, command.encoder.keyCount, side.replica);
      return;
    }
    if (scanner.kind === ReplyKind.Nil) {
      const writtenBefore = names !== null && req.written[e] === 1;
      // A replica may not have a write yet (replication lag): stale, not lost.
      if (side.replica && (writtenBefore || prepared.missFailsVerify)) {
        c.staleReads++;
        c.ok++;
      }
      // A key whose write was acknowledged before this read went out must be
      // there, unless a command that may remove it went out since.
      else if (writtenBefore && names!.isLost(req.command[e], req.keyIndex[e])) c.lostWrites++;
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
    // A key whose generations this run tracks: the floor it was read with, how many it has drawn so far.
    const tracked = names !== null && prepared.keyGenerations;
    const floor = tracked ? req.generation[e] : 0;
    const next = tracked ? names.nextOf(req.command[e], req.keyIndex[e]) : -1;
    const verdict = kind === ReplyKind.Bulk || kind === ReplyKind.Verbatim ? this.valueVerdict(buf, scanner.payloadStart, scanner.payloadLen, req.keyHash[e], floor, next) : WRONG;
    if (verdict === FRESH) {
      c.ok++;
      return;
    }
    c.mismatches++;
    if (c.firstMismatch === null) {
      c.firstMismatch =
        verdict === WRONG
          ? this.describeMismatch(reader, req.command[e], req.keyIndex[e])
          : `key ${prepared.keyNameText(req.command[e], req.keyIndex[e])}: stale value: generation ${verdict.got}, wrote ${verdict.wrote} (the server acknowledged a newer write and returned an older value)`;
    }
  }

  /**
   * Whether `len` bytes of `buf` at `at` are a fresh value of the key hashed
   * to `h`, read with floor `floor` (key-names.ts; 0: none). The run's own
   * generation with no floor past it is one comparison; anything else is
   * decoded. As value_verdict in tally.rs.
   */
  private valueVerdict(buf: Uint8Array, at: number, len: number, h: number, floor: number, next: number): Verdict {
    const values = this.prepared.values;
    if (floor <= 1 && values.matches(buf, at, len, h)) return FRESH;
    // Every value of the factory decodes to some generation of any key: only a window near what was written counts
    // (as generation_verdict in tally.rs).
    const content = contentOf(buf, at, len);
    if (content < 0 || !values.matchesOf(buf, at, len, h, content)) return WRONG;
    const base = values.generation;
    const generation = generationOf(h, content);
    const offset = (generation - base) >>> 0;
    const behindBase = (base - generation) >>> 0;
    if (next >= 0 && offset <= 0xffff) {
      if (floor === 0) return FRESH;
      const f = floor - 1;
      // From the floor's write on; else older than it, or an earlier run's value it replaced.
      return ((offset - f) & 0xffff) < ((next - f) & 0xffff) ? FRESH : { got: generation, wrote: (base + f) >>> 0 };
    }
    if (this.prepared.generationWindow && offset <= 0xffff) return FRESH;
    return behindBase >= 1 && behindBase <= 0x10000 ? { got: generation, wrote: base } : WRONG;
  }

  /**
   * --cluster: a request redirected or retried until it was given up: the
   * last answer counts as the error reply it is, with `text` as its reason,
   * its latency (from when it was due to `now`) recorded as any error
   * reply's is, so the histograms add up to the requests.
   */
  countGivenUp(req: InFlight, e: number, now: number, text: string, node: NodeTally | null): void {
    const c = this.counters;
    c.errors++;
    if (this.histogram !== null) {
      const sentAt = req.sentAt[e];
      const intended = req.intended.length > 0 ? req.intended[e] : sentAt;
      const latencyNs = (now - intended) * 1e6;
      this.histogram.byCommand[req.command[e]].record(latencyNs);
      if (this.rated) this.serviceHistogram!.record((now - sentAt) * 1e6);
      c.requests++;
      if (node !== null) {
        node.requests++;
        node.errors++;
        node.histogram.record(latencyNs);
      }
    }
    if (req.op[e] === OP_SET) c.sets++;
    else c.gets++;
    this.received++;
    this.givenUp++;
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
      else this.arrayMismatch(() => `key ${prepared.keyNameText(req.command[e], keyAt(0))}: expected an array of ${keyCount} values, got "${escapeBytes(buf, s.payloadStart - 1, Math.min(s.payloadStart + 16, reader.pos), 48)}"`);
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
        if (prepared.verify) this.arrayMismatch(() => `key ${prepared.keyNameText(req.command[e], keyAt(k))}: expected a value, got "${escapeBytes(buf, pos, Math.min(pos + 16, reader.pos), 48)}"`);
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
      if (prepared.verify && this.valueVerdict(buf, p, len, prepared.keyHashOf(keyAt(k)), 0, -1) !== FRESH) {
        this.arrayMismatch(() => {
          const expected = prepared.valueBytes(keyAt(k));
          const at = firstDifference(expected, 0, expected.length, buf, p, len);
          return `key ${prepared.keyNameText(req.command[e], keyAt(k))}: ${expected.length} bytes expected, ${len} received, first difference at byte ${at}: expected "${escapeBytes(expected, 0, expected.length, 48)}", got "${escapeBytes(buf, p, p + len, 48)}"`;
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
  private describeMismatch(reader: ReplyReader, command: number, keyIndex: number): string {
    const buf = reader.buf;
    const s = reader.scanner;
    const key = this.prepared.keyNameText(command, keyIndex);
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

/** Counts slots a turn of a cut reads (of COUNTS_LENGTH, 32,768): some µs a turn once compiled, 0.1–0.3 ms before. */
const CUT_SLICE = 2048;
/** A cut's slices are read a timer's millisecond apart, not back to back: the event loop's other work goes on between them. */
const CUT_SLICE_EVERY_MS = 1;

/**
 * The measured phase's time series: the clients record into `current`,
 * which holds the current interval only; at each boundary (a timer) it is
 * added to the phase's histograms, written into a RawInterval (its
 * histograms packed, 2–3 bytes a non-empty bucket: packed-histogram.ts) and emptied.
 * No work per reply. Paired with IntervalClock in crates/respbench-core/src/tally.rs.
 *
 * The cut reads every counts slot of each command's histogram (32,768 a
 * histogram). In one event-loop turn that held the loop for 9–14 ms at the
 * first cut (the loops not yet compiled, the phase's counts arrays touched
 * for the first time) and ~0.5 ms at each later one: under --rate, requests
 * due then went out that late. So the cut only swaps counts arrays at the
 * boundary (OpHistograms.swap: recording goes on into empty ones) and
 * reads the taken ones CUT_SLICE slots a turn, the turns a millisecond
 * apart (read back to back, the first cut's slices still took most of the
 * loop for 5 ms); the interval is handed on (`intervals`, onInterval) some
 * 16 ms after its end, when the last slice is read (an --interval shorter
 * than that reads the rest of the last one at its own cut, in one turn, as
 * before). warm() runs the reading once before the clock starts.
 */
export class IntervalClock {
  readonly intervals: RawInterval[] = [];
  private index = 0;
  private before: Counters;
  private timer: NodeJS.Timeout | null = null;
  /** Each command's histogram of the interval being cut, swapped out of `current`; empty between cuts (the next cut's), none after finish. */
  private readonly taken: LatencyHistogram[];
  /** Packers of the interval being cut: the write side's, the read side's, then (a mix) each command's. */
  private readonly writers: PackedWriter[];
  /** The interval being cut (its histograms packed when the last slice is read), then the empty ones a late timer slept through. */
  private pending: RawInterval[] = [];
  /** The next counts slot the cut reads; COUNTS_LENGTH when no cut is under way. */
  private slot = COUNTS_LENGTH;
  /** The next slice's timer. */
  private sliceTimer: NodeJS.Timeout | null = null;

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
    // Allocated before the clock starts.
    this.taken = current.byCommand.map(() => new LatencyHistogram());
    this.writers = Array.from({ length: 2 + (perCommand ? current.byCommand.length : 0) }, () => new PackedWriter());
    this.schedule();
  }

  private schedule(): void {
    const due = this.start + (this.index + 1) * this.everyMs;
    this.timer = setTimeout(() => {
      const now = performance.now();
      // A timer counts from libuv's loop time, which may be old when it is set: not due yet, wait on.
      // (The global performance, not node:perf_hooks': a unit test's fake clock replaces the global.)
      if (now < due) return this.schedule();
      this.cut(now);
      this.schedule();
    }, Math.max(0, due - performance.now()));
  }

  /** Ends the current interval at `now`; intervals a late timer slept through are recorded empty. */
  private cut(now: number): void {
    // One still being read (a timer late by a whole interval) is finished first.
    this.complete();
    const c = this.counters;
    const b = this.before;
    const at = (i: number) => i * this.everyMs * 1e6;
    const empty = () => EMPTY_PACKED;
    this.pending.push({
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
      // Packed when the last slice is read.
      setHistogram: EMPTY_PACKED,
      getHistogram: EMPTY_PACKED,
      ...(this.perCommand ? { commandHistograms: this.current.byCommand.map(empty) } : {}),
      connections: this.openNow(),
      bytesOut: c.bytesOut - b.bytesOut,
      bytesIn: c.bytesIn - b.bytesIn,
      lost: c.lost - b.lost,
    });
    // The interval's counts change hands; their totals count in the phase's at once (p99 reads both).
    const phase = this.phase.byCommand;
    const taken = this.taken;
    for (let k = 0; k < taken.length; k++) {
      taken[k] = this.current.swap(k, taken[k]);
      phase[k].total += taken[k].total;
      taken[k].total = 0;
    }
    this.before = { ...c };
    this.index++;
    while (this.start + (this.index + 1) * this.everyMs <= now) {
      const commandHistograms = this.perCommand ? { commandHistograms: this.current.byCommand.map(empty) } : {};
      this.pending.push({ index: this.index, startNs: at(this.index), endNs: at(this.index + 1), requests: 0, sets: 0, gets: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: empty(), getHistogram: empty(), ...commandHistograms, connections: this.openNow(), bytesOut: 0, bytesIn: 0, lost: 0 });
      this.index++;
    }
    this.slot = 0;
    this.sliceTimer = setTimeout(this.onSlice, CUT_SLICE_EVERY_MS);
  }

  private readonly onSlice = (): void => {
    this.sliceTimer = null;
    this.read(CUT_SLICE);
    if (this.slot < COUNTS_LENGTH) this.sliceTimer = setTimeout(this.onSlice, CUT_SLICE_EVERY_MS);
  };

  /** The cut under way read to its end now. */
  private complete(): void {
    if (this.sliceTimer !== null) clearTimeout(this.sliceTimer);
    this.sliceTimer = null;
    if (this.slot < COUNTS_LENGTH) this.read(COUNTS_LENGTH);
  }

  /**
   * The next `n` counts slots of the interval being cut: each command's count
   * added to the phase's and zeroed, the op kinds' sums (and a mix's
   * commands) packed; at the last slot the interval is handed on.
   */
  private read(n: number): void {
    const end = Math.min(this.slot + n, COUNTS_LENGTH);
    const ops = this.phase.ops;
    const phase = this.phase.byCommand;
    const taken = this.taken;
    const writers = this.writers;
    const perCommand = this.perCommand;
    for (let i = this.slot; i < end; i++) {
      let writes = 0;
      let reads = 0;
      for (let k = 0; k < taken.length; k++) {
        const counts = taken[k].counts;
        const v = counts[i];
        if (v === 0) continue;
        counts[i] = 0;
        phase[k].counts[i] += v;
        if (ops[k] === OP_SET) writes += v;
        else reads += v;
        if (perCommand) writers[2 + k].add(i, v);
      }
      if (writes > 0) writers[0].add(i, writes);
      if (reads > 0) writers[1].add(i, reads);
    }
    this.slot = end;
    if (end < COUNTS_LENGTH) return;
    const cut = this.pending[0];
    cut.setHistogram = writers[0].take();
    cut.getHistogram = writers[1].take();
    if (perCommand) cut.commandHistograms = taken.map((_, k) => writers[2 + k].take());
    const done = this.pending;
    this.pending = [];
    for (const i of done) this.emit(i);
  }

  /**
   * A cut read once over made-up counts, all thrown away: call before a
   * phase's clock starts, so that its first cut runs compiled code. Left to
   * the first cut, the reading ran interpreted and was compiled then
   * (`node --trace-opt --trace-deopt`: read's OSR compile, deopts for
   * feedback it had not seen), and requests due in the next ~15 ms went out
   * up to 5 ms late.
   */
  static warm(ops: readonly number[], perCommand: boolean): void {
    const current = new OpHistograms(ops);
    for (const h of current.byCommand) for (let i = 0; i < 4000; i++) h.record(1000 + i * 997);
    const clock = new IntervalClock(current.emptyLike(), 1000, performance.now(), newCounters(), current, undefined, () => 0, perCommand);
    clearTimeout(clock.timer!);
    clock.cut(performance.now());
    clock.complete();
  }

  private emit(i: RawInterval): void {
    this.intervals.push(i);
    this.onInterval?.(i);
  }

  /** p99 of the phase so far (the intervals cut, one being cut, and the current one), for the progress line. */
  p99(): number {
    return valueAtPercentileOf([...this.phase.byCommand, ...this.current.byCommand, ...this.taken], 99);
  }

  /** The last interval cut at the end (read at once), and the phase's latencies back in `current`. */
  finish(now: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.cut(now);
    this.complete();
    this.current.merge(this.phase);
    // Not kept with the series.
    this.taken.length = 0;
  }
}
