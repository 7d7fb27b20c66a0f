/**
 * Incremental RESP2/RESP3 reply scanning, paired with
 * crates/respbench-core/src/reply.rs. `ReplyScanner.scan(buf, at, end)` means
 * the same in both languages: scan one reply starting at `at`; the result is
 * the offset just past it (an offset, not a length), or -1 when the bytes up
 * to `end` hold only part of it (Rust: `Scan::Incomplete`). It allocates
 * nothing: the kind of the top-level reply and where its payload lies are
 * left in fields, as mini-redis's `check` does before `parse`. Malformed input
 * throws ProtocolError, the only thing it ever throws. `ReplyReader` (TS
 * only) carries a reply split across socket reads.
 */

export const enum ReplyKind {
  Simple = 1,
  Error = 2,
  Integer = 3,
  Bulk = 4,
  Nil = 5,
  Aggregate = 6,
  /** Doubles, big numbers, booleans. */
  Other = 7,
  /** RESP3 `=`: the payload is the text after its `txt:` (or other 3-byte format) prefix. */
  Verbatim = 8,
  /** RESP3 `>`: out-of-band data (pub/sub, client tracking), not the answer to a request. */
  Push = 9,
}

/** Longest header or simple line accepted before the bytes are judged garbage. */
const MAX_LINE = 1 << 20;
/** Redis's own proto-max-bulk-len default. */
export const MAX_BULK = 512 * 1024 * 1024;
const MAX_AGGREGATE = 1 << 30;

export class ProtocolError extends Error {
  constructor(
    /** What is wrong, without where: "unknown reply type byte". */
    readonly reason: string,
    /** Where the offending bytes start, as an index into the scanned buffer. */
    readonly offset: number,
    /** The offending bytes, escaped (escapeBytes). */
    readonly bytes: string,
  ) {
    super(`${reason} at byte ${offset}: "${bytes}"`);
    this.name = 'ProtocolError';
  }
}

/** Up to `max` bytes from `at`, escaped so that any byte prints on one line. */
export function escapeBytes(buf: Uint8Array, at: number, end: number, max = 32): string {
  let s = '';
  const stop = Math.min(end, at + max);
  for (let i = at; i < stop; i++) {
    const b = buf[i];
    if (b === 13) s += '\\r';
    else if (b === 10) s += '\\n';
    else if (b === 92) s += '\\\\';
    else if (b === 34) s += '\\"';
    else if (b >= 32 && b < 127) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).padStart(2, '0');
  }
  if (end > stop) s += '…';
  return s;
}

export class ReplyScanner {
  /** Kind of the top-level reply last scanned. */
  kind: ReplyKind = ReplyKind.Other;
  /** For Bulk, Simple, Error and Verbatim: where the payload starts and its length; for aggregates the element count. */
  payloadStart = 0;
  payloadLen = 0;

  private lineEnd = 0;

  /**
   * Where an incomplete reply's scan stopped, so that `resume` goes on from
   * there instead of from the reply's first byte: a 30 MB array arriving in
   * 64 KiB reads is then scanned once, not once per read. partialAt is the
   * reply's first byte (-1: nothing saved), partialPos the first element not
   * yet scanned, partialPending the elements still to come.
   */
  private partialAt = -1;
  private partialPos = 0;
  private partialPending = 0;
  private partialTop = false;
  private partialTopAgainAt = -1;

  /**
   * Scans one reply starting at `at`. Returns the offset just past it, or -1
   * when `buf[at..end)` holds only part of it.
   */
  scan(buf: Uint8Array, at: number, end: number): number {
    return this.walk(buf, at, end, at, 1, true, -1);
  }

  /**
   * As scan, but when the last call left the reply at `at` incomplete, goes
   * on where it stopped. The caller keeps the bytes seen so far unchanged
   * (only appends), and calls `moved` when it moves them.
   */
  resume(buf: Uint8Array, at: number, end: number): number {
    if (this.partialAt !== at) return this.walk(buf, at, end, at, 1, true, -1);
    return this.walk(buf, at, end, this.partialPos, this.partialPending, this.partialTop, this.partialTopAgainAt);
  }

  /** The incomplete reply's bytes were moved `by` bytes toward the buffer's start. */
  moved(by: number): void {
    if (this.partialAt < 0) return;
    this.partialAt -= by;
    this.partialPos -= by;
    this.payloadStart -= by;
  }

  /**
   * Walks the reply at `at` from `pos` with `pending` elements to go; while
   * `top`, the element scanned sets kind and payload. A top-level attribute
   * annotates the reply after it: that one is top again once `pending` comes
   * back to `topAgainAt`. Nested replies are counted, not recursed into.
   */
  private walk(buf: Uint8Array, at: number, end: number, pos: number, pending: number, top: boolean, topAgainAt: number): number {
    while (pending > 0) {
      if (topAgainAt === pending) {
        top = true;
        topAgainAt = -1;
      }
      const start = pos;
      if (pos >= end) return this.stop(at, start, pending, top, topAgainAt);
      const type = buf[pos];
      switch (type) {
        case 43: // '+'
        case 45: // '-'
        case 44: // ',' double
        case 40: // '(' big number
        case 35: // '#' boolean
        case 95: {
          // '_' null
          if (!this.findLine(buf, pos + 1, end)) return this.stop(at, start, pending, top, topAgainAt);
          if (top) {
            this.kind = type === 43 ? ReplyKind.Simple : type === 45 ? ReplyKind.Error : type === 95 ? ReplyKind.Nil : ReplyKind.Other;
            this.payloadStart = pos + 1;
            this.payloadLen = this.lineEnd - pos - 1;
          }
          pos = this.lineEnd + 2;
          break;
        }
        case 58: {
          // ':' integer
          if (!this.findLine(buf, pos + 1, end)) return this.stop(at, start, pending, top, topAgainAt);
          this.parseNumber(buf, pos + 1, this.lineEnd, start, 'bad integer');
          if (top) {
            this.kind = ReplyKind.Integer;
            this.payloadStart = pos + 1;
            this.payloadLen = this.lineEnd - pos - 1;
          }
          pos = this.lineEnd + 2;
          break;
        }
        case 36: // '$' bulk
        case 33: // '!' blob error
        case 61: {
          // '=' verbatim
          if (!this.findLine(buf, pos + 1, end)) return this.stop(at, start, pending, top, topAgainAt);
          const len = this.parseNumber(buf, pos + 1, this.lineEnd, start, 'bad bulk length');
          const body = this.lineEnd + 2;
          if (len === -1 && type === 36) {
            if (top) {
              this.kind = ReplyKind.Nil;
              this.payloadStart = body;
              this.payloadLen = 0;
            }
            pos = body;
            break;
          }
          if (len < 0 || len > MAX_BULK) throw new ProtocolError(`bad bulk length ${len}`, start, escapeBytes(buf, start, end));
          if (body + len + 2 > end) return this.stop(at, start, pending, top, topAgainAt);
          if (buf[body + len] !== 13 || buf[body + len + 1] !== 10) {
            throw new ProtocolError('bulk string not followed by CRLF', body + len, escapeBytes(buf, body + len, end));
          }
          if (top) {
            this.kind = type === 36 ? ReplyKind.Bulk : type === 33 ? ReplyKind.Error : ReplyKind.Verbatim;
            // A verbatim string's text follows its format: "txt:hello".
            const format = type === 61 && len >= 4 && buf[body + 3] === 58 ? 4 : 0;
            this.payloadStart = body + format;
            this.payloadLen = len - format;
          }
          pos = body + len + 2;
          break;
        }
        case 42: // '*' array
        case 126: // '~' set
        case 62: // '>' push
        case 37: // '%' map
        case 124: {
          // '|' attribute
          if (!this.findLine(buf, pos + 1, end)) return this.stop(at, start, pending, top, topAgainAt);
          const n = this.parseNumber(buf, pos + 1, this.lineEnd, start, 'bad aggregate length');
          pos = this.lineEnd + 2;
          if (n === -1 && type === 42) {
            if (top) {
              this.kind = ReplyKind.Nil;
              this.payloadStart = pos;
              this.payloadLen = 0;
            }
            break;
          }
          if (n < 0 || n > MAX_AGGREGATE) throw new ProtocolError(`bad aggregate length ${n}`, start, escapeBytes(buf, start, end));
          if (type === 124) {
            // An attribute annotates the reply that follows it; that reply,
            // not the attribute's own keys and values, is the top one.
            pending += 2 * n;
            if (top) {
              topAgainAt = pending - 2 * n;
              top = n === 0;
            }
            continue;
          }
          pending += type === 37 ? 2 * n : n;
          if (top) {
            this.kind = type === 62 ? ReplyKind.Push : ReplyKind.Aggregate;
            this.payloadStart = pos;
            this.payloadLen = n;
          }
          break;
        }
        default:
          throw new ProtocolError('unknown reply type byte', pos, escapeBytes(buf, pos, end));
      }
      pending--;
      top = false;
    }
    this.partialAt = -1;
    return pos;
  }

  /** Saves where the scan of the reply at `at` stopped (the element at `pos` is not complete) and says "incomplete". */
  private stop(at: number, pos: number, pending: number, top: boolean, topAgainAt: number): number {
    this.partialAt = at;
    this.partialPos = pos;
    this.partialPending = pending;
    this.partialTop = top;
    this.partialTopAgainAt = topAgainAt;
    return -1;
  }

  /** Finds CRLF from `from`; sets lineEnd to the CR. False when not yet in the buffer. */
  private findLine(buf: Uint8Array, from: number, end: number): boolean {
    const limit = Math.min(end, from + MAX_LINE);
    for (let i = from; i < limit; i++) {
      if (buf[i] === 13) {
        if (i + 1 >= end) return false;
        if (buf[i + 1] !== 10) throw new ProtocolError('CR not followed by LF', i, escapeBytes(buf, i, end));
        this.lineEnd = i;
        return true;
      }
      if (buf[i] === 10) throw new ProtocolError('LF without CR', i, escapeBytes(buf, from - 1, end));
    }
    if (end - from >= MAX_LINE) throw new ProtocolError('line longer than 1 MiB', from - 1, escapeBytes(buf, from - 1, end));
    return false;
  }

  /** A decimal integer in buf[from..to), as in RESP headers and integer replies. */
  private parseNumber(buf: Uint8Array, from: number, to: number, start: number, what: string): number {
    let i = from;
    let negative = false;
    if (i < to && (buf[i] === 45 || buf[i] === 43)) {
      negative = buf[i] === 45;
      i++;
    }
    if (i >= to || to - i > 19) throw new ProtocolError(what, start, escapeBytes(buf, start, to + 2));
    let n = 0;
    for (; i < to; i++) {
      const d = buf[i] - 48;
      if (d < 0 || d > 9) throw new ProtocolError(what, start, escapeBytes(buf, start, to + 2));
      n = n * 10 + d;
    }
    return negative ? -n : n;
  }
}

/**
 * One connection's reply stream, read in chunks as they arrive: the bytes of
 * a reply split across reads are kept in a carry buffer and joined to the
 * next chunk, and a chunk that holds only whole replies is scanned where it
 * lies, without a copy. The engine's loop is
 *
 *   reader.push(chunk);
 *   while (reader.pending() && reader.next()) use(reader.buf, reader.scanner);
 *   reader.keepRest();
 *
 * ProtocolErrors thrown by next() carry offsets into `buf`; `base` turns
 * them into offsets in the whole stream. A reply that spans many reads is
 * scanned once in all (the scanner resumes where the last read ended), so a
 * large array costs time linear in its size.
 */
export class ReplyReader {
  readonly scanner = new ReplyScanner();
  /** The bytes being scanned: the chunk itself, or the carry buffer. */
  buf: Buffer = Buffer.alloc(0);
  /** Where the next reply starts in buf, and where buf's bytes end. */
  pos = 0;
  end = 0;
  /** Offset in the whole stream of buf[0]. */
  base = 0;
  /** Bytes received on the stream so far. */
  received = 0;
  private carry: Buffer;
  private carryLen = 0;

  constructor(initialCarry = 64 * 1024) {
    this.carry = Buffer.allocUnsafe(initialCarry);
  }

  /** Makes `chunk[0, len)`, after whatever was left over, the bytes to scan (a shared read buffer: valid until keepRest). */
  push(chunk: Buffer, len = chunk.length): void {
    if (this.carryLen === 0) {
      this.buf = chunk;
      this.end = len;
      this.base = this.received;
    } else {
      this.base = this.received - this.carryLen;
      this.append(chunk, 0, len);
      this.buf = this.carry;
      this.end = this.carryLen;
    }
    this.pos = 0;
    this.received += len;
  }

  /** True while buf holds bytes not yet scanned as a whole reply. */
  pending(): boolean {
    return this.pos < this.end;
  }

  /**
   * Scans the next reply. True when a whole one was there: the scanner's
   * fields describe it, its payload lies in `buf`. False when only part of
   * it has arrived.
   */
  next(): boolean {
    const next = this.scanner.resume(this.buf, this.pos, this.end);
    if (next < 0) return false;
    this.pos = next;
    return true;
  }

  /** Keeps the bytes of a reply not yet complete for the next push. */
  keepRest(): void {
    const { buf, pos, end } = this;
    if (buf !== this.carry) {
      this.carryLen = 0;
      if (pos < end) this.append(buf, pos, end);
    } else if (pos > 0) {
      this.carry.copy(this.carry, 0, pos, end);
      this.carryLen = end - pos;
    }
    // The incomplete reply now starts at carry[0]: its scan resumes there.
    if (pos > 0 || buf !== this.carry) this.scanner.moved(pos);
    this.buf = this.carry;
    this.pos = 0;
    this.end = this.carryLen;
    this.base = this.received - this.carryLen;
  }

  /** Bytes of a reply received but not yet complete (after keepRest). */
  get partialLength(): number {
    return this.carryLen;
  }

  /** The bytes of the incomplete reply, escaped, for messages. */
  describePartial(max = 32): string {
    return escapeBytes(this.carry, 0, this.carryLen, max);
  }

  private append(src: Buffer, from: number, to: number): void {
    const need = this.carryLen + (to - from);
    if (need > this.carry.length) {
      const grown = Buffer.allocUnsafe(Math.max(need, this.carry.length * 2));
      this.carry.copy(grown, 0, 0, this.carryLen);
      this.carry = grown;
    }
    src.copy(this.carry, this.carryLen, from, to);
    this.carryLen = need;
  }
}
