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
  Other = 7,
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
  /** For Bulk, Simple and Error: where the payload starts and its length. */
  payloadStart = 0;
  payloadLen = 0;

  private lineEnd = 0;

  /**
   * Scans one reply starting at `at`. Returns the offset just past it, or -1
   * when `buf[at..end)` holds only part of it.
   */
  scan(buf: Uint8Array, at: number, end: number): number {
    return this.walk(buf, at, end, 1, true);
  }

  /**
   * Walks `count` replies from `pos`; the first sets kind and payload when
   * `top`. Returns the offset past them or -1.
   */
  private walk(buf: Uint8Array, at: number, end: number, count: number, top: boolean): number {
    let pos = at;
    let pending = count;
    while (pending > 0) {
      if (pos >= end) return -1;
      const type = buf[pos];
      const start = pos;
      pending--;
      switch (type) {
        case 43: // '+'
        case 45: // '-'
        case 44: // ',' double
        case 40: // '(' big number
        case 35: // '#' boolean
        case 95: {
          // '_' null
          if (!this.findLine(buf, pos + 1, end)) return -1;
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
          if (!this.findLine(buf, pos + 1, end)) return -1;
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
          if (!this.findLine(buf, pos + 1, end)) return -1;
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
          if (body + len + 2 > end) return -1;
          if (buf[body + len] !== 13 || buf[body + len + 1] !== 10) {
            throw new ProtocolError('bulk string not followed by CRLF', body + len, escapeBytes(buf, body + len, end));
          }
          if (top) {
            this.kind = type === 36 ? ReplyKind.Bulk : type === 33 ? ReplyKind.Error : ReplyKind.Other;
            this.payloadStart = body;
            this.payloadLen = len;
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
          if (!this.findLine(buf, pos + 1, end)) return -1;
          const n = this.parseNumber(buf, pos + 1, this.lineEnd, start, 'bad aggregate length');
          pos = this.lineEnd + 2;
          if (n === -1 && type === 42) {
            if (top) this.kind = ReplyKind.Nil;
            break;
          }
          if (n < 0 || n > MAX_AGGREGATE) throw new ProtocolError(`bad aggregate length ${n}`, start, escapeBytes(buf, start, end));
          if (type === 124) {
            // An attribute annotates the reply that follows it; that reply,
            // not the attribute's own keys and values, is the top one.
            if (top) {
              pos = this.walk(buf, pos, end, 2 * n, false);
              if (pos < 0) return -1;
              pending++;
              continue;
            }
            pending += 2 * n + 1;
            break;
          }
          pending += type === 37 ? 2 * n : n;
          if (top) {
            this.kind = ReplyKind.Aggregate;
            this.payloadStart = pos;
            this.payloadLen = n;
          }
          break;
        }
        default:
          throw new ProtocolError('unknown reply type byte', pos, escapeBytes(buf, pos, end));
      }
      top = false;
    }
    return pos;
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
 * them into offsets in the whole stream.
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

  /** Makes `chunk`, after whatever was left over, the bytes to scan. */
  push(chunk: Buffer): void {
    if (this.carryLen === 0) {
      this.buf = chunk;
      this.end = chunk.length;
      this.base = this.received;
    } else {
      this.base = this.received - this.carryLen;
      this.append(chunk, 0, chunk.length);
      this.buf = this.carry;
      this.end = this.carryLen;
    }
    this.pos = 0;
    this.received += chunk.length;
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
    const next = this.scanner.scan(this.buf, this.pos, this.end);
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
