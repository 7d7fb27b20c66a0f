/**
 * What each request in flight on one Link needs when its reply comes (op,
 * command, key hash, key index, send times), in a first-in first-out ring of
 * typed arrays: a reply is matched to the oldest entry, and recording a
 * request allocates nothing. Ring entries are "entries", never "slots" (a
 * slot is a cluster hash slot).
 *
 * The arrays a run does not need are empty (a multi-key command's keys, the
 * written-before flag, --rate's intended time, --cluster's redirection
 * fields), chosen once when the ring is made. A ring grows (doubling) only
 * when --cluster re-sends another Link's requests on it; a single server's
 * ring holds exactly the window.
 */
import type { Request } from './request-source.js';

/** Which optional fields a ring keeps, decided once per run. */
export interface InFlightShape {
  /** Keys per request when a command names several (1: only keyIndex). */
  maxKeys: number;
  /** Reads sent after their key's write was acknowledged are flagged (--verify-get, mixed). */
  tracksWritten: boolean;
  /** --rate: each request's due time, its latency's start. */
  rated: boolean;
  /** --cluster: ASKING, hop counts, first-redirection time, backoff time and the Link whose window it is charged to. */
  routed: boolean;
}

const EMPTY_U8 = new Uint8Array(0);
const EMPTY_U16 = new Uint16Array(0);
const EMPTY_U32 = new Uint32Array(0);
const EMPTY_F64 = new Float64Array(0);

export class InFlight {
  op: Uint8Array;
  /** Which of PreparedPlan.commands it is: its latency goes to that command's histogram. */
  command: Uint16Array;
  keyHash: Uint32Array;
  keyIndex: Float64Array;
  /** maxKeys per entry, when a command names several keys. */
  keys: Float64Array;
  sentAt: Float64Array;
  /** --rate (and redirected requests): when it was due; latency counts from here. */
  intended: Float64Array;
  /** 1: a read sent after its key's write was acknowledged (nil then is a lost write). */
  written: Uint8Array;
  /** With `written`: a write's generation tag, a read's floor when it went out (key-names.ts). */
  generation: Uint32Array;
  /** --cluster: sent after ASKING, whose +OK comes first. */
  asking: Uint8Array;
  /** --cluster: MOVED / ASK redirections in a row (a TRYAGAIN or CLUSTERDOWN ends the row). */
  hops: Uint8Array;
  /** --cluster: TRYAGAIN / CLUSTERDOWN retries (and sends again after a node could not be reached) so far. */
  retries: Uint8Array;
  /** --cluster: not sent again before this (a backoff). */
  notBefore: Float64Array;
  /** --cluster: index (in its Client's links) of the Link whose window the request is charged to. */
  origin: Uint16Array;
  head = 0;
  len = 0;
  capacity: number;
  readonly maxKeys: number;

  constructor(
    capacity: number,
    readonly shape: InFlightShape,
  ) {
    this.capacity = capacity;
    this.maxKeys = shape.maxKeys;
    this.op = new Uint8Array(capacity);
    this.command = new Uint16Array(capacity);
    this.keyHash = new Uint32Array(capacity);
    this.keyIndex = new Float64Array(capacity);
    this.keys = shape.maxKeys > 1 ? new Float64Array(capacity * shape.maxKeys) : EMPTY_F64;
    this.sentAt = new Float64Array(capacity);
    const routed = shape.routed;
    this.intended = shape.rated || routed ? new Float64Array(capacity) : EMPTY_F64;
    this.written = shape.tracksWritten ? new Uint8Array(capacity) : EMPTY_U8;
    this.generation = shape.tracksWritten ? new Uint32Array(capacity) : EMPTY_U32;
    this.asking = routed ? new Uint8Array(capacity) : EMPTY_U8;
    this.hops = routed ? new Uint8Array(capacity) : EMPTY_U8;
    this.retries = routed ? new Uint8Array(capacity) : EMPTY_U8;
    this.notBefore = routed ? new Float64Array(capacity) : EMPTY_F64;
    this.origin = routed ? new Uint16Array(capacity) : EMPTY_U16;
  }

  /** The entry a push would fill, growing the ring when it is full. */
  private tailEntry(): number {
    if (this.len === this.capacity) this.grow();
    const at = this.head + this.len;
    return at >= this.capacity ? at - this.capacity : at;
  }

  /** Records a request drawn from a source, sent at `now`; returns its entry. */
  push(r: Request, now: number, writtenBefore: boolean): number {
    const e = this.tailEntry();
    this.op[e] = r.op;
    this.command[e] = r.command;
    this.keyHash[e] = r.keyHash;
    this.keyIndex[e] = r.keyIndex;
    const maxKeys = this.maxKeys;
    if (maxKeys > 1) for (let k = 0; k < r.keyCount; k++) this.keys[e * maxKeys + k] = r.keys[k];
    this.sentAt[e] = now;
    // Overwritten under --rate with the due time; a re-sent request keeps counting from here.
    if (this.intended.length > 0) this.intended[e] = now;
    if (this.written.length > 0) {
      this.written[e] = writtenBefore ? 1 : 0;
      this.generation[e] = r.generation;
    }
    if (this.asking.length > 0) {
      this.asking[e] = 0;
      this.hops[e] = 0;
      this.retries[e] = 0;
    }
    this.len++;
    return e;
  }

  /** Copies entry `e` of `from` (a popped one stays readable until the next push there) to the tail; returns its entry. */
  pushFrom(from: InFlight, e: number): number {
    const d = this.tailEntry();
    this.op[d] = from.op[e];
    this.command[d] = from.command[e];
    this.keyHash[d] = from.keyHash[e];
    this.keyIndex[d] = from.keyIndex[e];
    const maxKeys = this.maxKeys;
    for (let k = 0; k < maxKeys && maxKeys > 1; k++) this.keys[d * maxKeys + k] = from.keys[e * maxKeys + k];
    this.sentAt[d] = from.sentAt[e];
    if (this.intended.length > 0) this.intended[d] = from.intended.length > 0 ? from.intended[e] : from.sentAt[e];
    if (this.written.length > 0) {
      this.written[d] = from.written.length > 0 ? from.written[e] : 0;
      this.generation[d] = from.generation.length > 0 ? from.generation[e] : 0;
    }
    if (this.asking.length > 0) {
      const routed = from.asking.length > 0;
      this.asking[d] = routed ? from.asking[e] : 0;
      this.hops[d] = routed ? from.hops[e] : 0;
      this.retries[d] = routed ? from.retries[e] : 0;
      this.notBefore[d] = routed ? from.notBefore[e] : 0;
      this.origin[d] = routed ? from.origin[e] : 0;
    }
    this.len++;
    return d;
  }

  /** The oldest entry (len > 0). */
  peek(): number {
    return this.head;
  }

  /** Takes the oldest entry off; its fields stay readable until the next push. */
  shift(): number {
    const e = this.head;
    this.head = e + 1 === this.capacity ? 0 : e + 1;
    this.len--;
    return e;
  }

  clear(): void {
    this.head = 0;
    this.len = 0;
  }

  /** The entry `i` places after the oldest (i < len). */
  at(i: number): number {
    const at = this.head + i;
    return at >= this.capacity ? at - this.capacity : at;
  }

  /** Twice the room, entries kept in order from 0 (only --cluster's re-sent requests make a ring grow). */
  private grow(): void {
    const old = this.capacity;
    const capacity = old * 2;
    const head = this.head;
    const len = this.len;
    const moved = <T extends Uint8Array | Uint16Array | Uint32Array | Float64Array>(a: T, per = 1): T => {
      if (a.length === 0) return a;
      const b = new (a.constructor as { new (n: number): T })(capacity * per);
      for (let i = 0; i < len; i++) {
        const from = (head + i) % old;
        for (let k = 0; k < per; k++) b[i * per + k] = a[from * per + k];
      }
      return b;
    };
    this.op = moved(this.op);
    this.command = moved(this.command);
    this.keyHash = moved(this.keyHash);
    this.keyIndex = moved(this.keyIndex);
    this.keys = moved(this.keys, this.maxKeys);
    this.sentAt = moved(this.sentAt);
    this.intended = moved(this.intended);
    this.written = moved(this.written);
    this.generation = moved(this.generation);
    this.asking = moved(this.asking);
    this.hops = moved(this.hops);
    this.retries = moved(this.retries);
    this.notBefore = moved(this.notBefore);
    this.origin = moved(this.origin);
    this.capacity = capacity;
    this.head = 0;
  }
}
