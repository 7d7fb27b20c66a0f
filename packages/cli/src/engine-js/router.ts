/**
 * --cluster: which of a client's Links a request goes to, and what a
 * redirection does. The client starts with one Link per primary (each fed by
 * that primary's RequestSource, as CRC16 slot ownership splits the stream);
 * a MOVED or ASK names a node, and the request is re-sent on the client's
 * Link to it (made and opened on first use), ASK after ASKING; a MOVED also
 * sends the slot's later requests straight there, and when the map did not
 * say so already, asks the phase's TopologyRefresh for the whole map, which
 * it then applies (applyTopology) to every slot. TRYAGAIN and CLUSTERDOWN
 * send the request again on the Link that answered, after a backoff, until
 * --timeout has passed since its first redirection. A single server has no
 * Router: its one Link is used directly. Paired with
 * crates/respbench-core/src/router.rs.
 *
 * Nothing is allocated per request: a re-sent request's entry is copied
 * between rings, its bytes encoded again into the Link's buffer (a
 * __rand_int__ in it drawn again from the router's own stream), and only a
 * new Link, the slot map and a given-up request's text are made, once each.
 */
import { performance } from 'node:perf_hooks';
import { InFlight } from './in-flight.js';
import { KeyStream } from './keys.js';
import type { Link } from './link.js';
import { nodeLabel, type Failure } from './plan.js';
import type { ReplyReader } from './reply.js';
import type { PreparedPlan, Request } from './request-source.js';
import type { Tally } from './tally.js';
import type { SlotMap, TopologyListener, TopologyRefresh } from './topology-refresh.js';

/** Hash slots of a cluster. */
const SLOTS = 16384;

export const REDIRECT_NONE = 0;
export const REDIRECT_MOVED = 1;
export const REDIRECT_ASK = 2;
export const REDIRECT_RETRY = 3;

/** Redirections (or retries) of one request before it counts as the error reply it got (--timeout since the first also ends them). */
export const MAX_HOPS = 64;
/** MOVED / ASK hops of one request sent again at once; later ones wait a backoff. */
export const FREE_HOPS = 2;
/** TRYAGAIN / CLUSTERDOWN: first wait before sending again, doubled each time, capped. */
const RETRY_BACKOFF_MS = 10;
const RETRY_BACKOFF_CAP_MS = 500;
/** Salt of the __rand_int__ stream of requests sent again (as the native engine's). */
const REDIRECT_RAND_SALT = 0x5bd1e995;

const ASKING = Buffer.from('*1\r\n$6\r\nASKING\r\n');

/** The wait before retry `n` (1-based): RETRY_BACKOFF_MS doubled each time, capped. */
export function backoffMs(n: number): number {
  return Math.min(RETRY_BACKOFF_CAP_MS, RETRY_BACKOFF_MS * 2 ** Math.min(n - 1, 10));
}

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

/** What the Router needs of its client: its Links, and a new one to a node a redirection names. */
export interface RouterOwner {
  readonly links: Link[];
  /** A new Link of this client to `target` (host:port), opening. */
  addLink(target: string): Link;
  /** Requests were queued on `link`: one that is down and not being opened again must be. */
  needsSocket(link: Link): void;
  fail(failure: Failure): void;
  readonly ended: boolean;
  pump(): void;
}

export class Router implements TopologyListener {
  /** slot → index in the client's links of the node a MOVED named for it (-1: where the sources route it). */
  private slotLink: Int16Array | null = null;
  /** A popped entry on its way to another ring (its own ring may grow and lose it). */
  private readonly scratch: InFlight;
  /** __rand_int__ draws of requests sent again (not the key stream's). */
  private readonly rand: KeyStream;
  /** A multi-key request's keys when it is encoded again. */
  private readonly keys: Float64Array;
  private readonly timeoutMs: number;
  /** The start map's owner of each slot, by label: where the sources route it. */
  private readonly sourceLabels: string[];

  constructor(
    private readonly owner: RouterOwner,
    private readonly prepared: PreparedPlan,
    private readonly tally: Tally,
    clientId: number,
    ringOf: (capacity: number) => InFlight,
    timeoutMs: number,
    private readonly refresh: TopologyRefresh | null,
  ) {
    this.scratch = ringOf(1);
    this.rand = new KeyStream((prepared.plan.seed ^ REDIRECT_RAND_SALT) >>> 0, clientId);
    this.keys = new Float64Array(prepared.maxKeys);
    this.timeoutMs = timeoutMs;
    this.sourceLabels = prepared.plan.cluster ? prepared.plan.cluster.nodes.map(nodeLabel) : [];
    refresh?.subscribe(this);
  }

  /** The Link a MOVED sent `slot`'s requests to, or -1 (where its source routes it). */
  linkOf(slot: number): number {
    const map = this.slotLink;
    return map === null || slot < 0 ? -1 : map[slot];
  }

  /**
   * A request drawn by Link `from`'s source for a slot a MOVED moved: its
   * bytes (`out[at, at + request.len)`, as encoded) copied to Link `to`'s
   * buffer, once; `intended`: when its latency starts.
   */
  sendDrawn(from: number, to: number, request: Request, out: Buffer, at: number, now: number, intended: number, writtenBefore: boolean): void {
    const link = this.owner.links[to];
    const ring = link.ring;
    const e = ring.push(request, now, writtenBefore);
    ring.intended[e] = intended;
    ring.origin[e] = from;
    link.reserve(request.len);
    out.copy(link.out, link.outLen, at, at + request.len);
    link.outLen += request.len;
    if (link.socket === null) this.owner.needsSocket(link);
  }

  /**
   * An error reply to entry `e` of `link`'s ring (already shifted off): a
   * redirection is taken over (true) and the request re-sent or given up;
   * any other error is the Tally's (false).
   */
  redirected(link: Link, e: number, reader: ReplyReader, now: number): boolean {
    const s = reader.scanner;
    const buf = reader.buf;
    const kind = redirectKind(buf, s.payloadStart, s.payloadLen);
    if (kind === REDIRECT_NONE) return false;
    if (link.node !== null) link.node.redirections++;
    const scratch = this.scratch;
    scratch.clear();
    scratch.pushFrom(link.ring, e);
    this.resend(0, link, kind, buf, s.payloadStart, s.payloadLen, now, null);
    return true;
  }

  /**
   * Re-sends scratch entry `e` as the reply `buf[start, start + len)` (or
   * `why`) says: MOVED / ASK to the node named, a retry on `answered` after
   * a backoff; given up after MAX_HOPS or --timeout since the first.
   */
  private resend(e: number, answered: Link, kind: number, buf: Buffer, start: number, len: number, now: number, why: string | null): void {
    const c = this.tally.counters;
    const R = this.scratch;
    if (R.hops[e] === 0) R.firstTry[e] = now;
    const hops = ++R.hops[e];
    if (hops > MAX_HOPS || now - R.firstTry[e] > this.timeoutMs) {
      // Given up: the last answer counts as the error reply it is.
      this.owner.links[R.origin[e]].charged--;
      this.tally.countGivenUp(R, e, `${why ?? buf.toString('latin1', start, start + Math.min(len, 300))} (after ${hops - 1} redirections or retries)`);
      return;
    }
    let to: Link;
    if (kind === REDIRECT_MOVED || kind === REDIRECT_ASK) {
      // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381"
      const end = start + len;
      let space = end - 1;
      while (space > start && buf[space] !== 32) space--;
      to = this.linkTo(buf, space + 1, end);
      if (kind === REDIRECT_MOVED) {
        c.moved++;
        let slot = 0;
        for (let i = start + 6; i < space; i++) slot = slot * 10 + buf[i] - 48;
        // A MOVED the map did not already say: the map is stale, ask for the whole of it.
        if (this.refresh !== null && this.linkOf(slot) !== to.index) {
          this.refresh.request(to.peer);
          this.refresh.shareMoved(this, slot, to.peerBytes.toString('latin1'));
        }
        this.slotMoved(slot, to.index);
      } else c.asked++;
      R.asking[e] = kind === REDIRECT_ASK ? 1 : 0;
      // Two nodes sending a request to each other while a slot changes hands: wait before the third hop.
      R.notBefore[e] = hops <= FREE_HOPS ? 0 : now + backoffMs(hops - FREE_HOPS);
    } else {
      c.retried++;
      R.asking[e] = 0;
      R.notBefore[e] = now + backoffMs(hops);
      to = answered;
    }
    if (R.notBefore[e] > now) {
      to.waiting!.pushFrom(R, e);
      if (to.backoffTimer === null) this.armBackoff(to);
      if (to.socket === null) this.owner.needsSocket(to);
    } else this.encodeOn(to, R, e);
  }

  /** MOVED said `slot` is at Link `index` now: its later requests go straight there. */
  private slotMoved(slot: number, index: number): void {
    if (slot < 0 || slot >= SLOTS) return;
    const map = this.slotLink ?? (this.slotLink = new Int16Array(SLOTS).fill(-1));
    map[slot] = index;
  }

  /**
   * A refreshed map: every slot whose owner is not the one its source routes
   * it to goes to the client's Link to its owner (opened now when new), the
   * others back to their sources' Links; overrides of earlier MOVEDs are
   * replaced. Only where a request goes changes: what each source draws
   * does not, so each request is still sent once.
   */
  applyTopology(next: SlotMap): void {
    if (this.owner.ended) return;
    const owners = this.prepared.slotOwners!;
    const sourceLabels = this.sourceLabels;
    // Per owner of the new map: the client's Link to it (-2: not looked up yet), looked up once per map.
    const linkOfOwner = new Int16Array(next.labels.length).fill(-2);
    const map = this.slotLink ?? (this.slotLink = new Int16Array(SLOTS).fill(-1));
    for (let s = 0; s < SLOTS; s++) {
      const o = next.owner[s];
      const label = next.labels[o];
      if (label === sourceLabels[owners[s]]) {
        map[s] = -1;
        continue;
      }
      if (linkOfOwner[o] === -2) linkOfOwner[o] = this.linkNamed(label).index;
      map[s] = linkOfOwner[o];
    }
  }

  /** Another client's MOVED: `slot`'s requests go straight to `target` here too. */
  learnMoved(slot: number, target: string): void {
    if (this.owner.ended || slot < 0 || slot >= SLOTS) return;
    this.slotMoved(slot, this.linkNamed(target).index);
  }

  /** The client's Link to `target` (host:port, as a redirection names it), made on first use; a primary's rather than a replica's. */
  private linkNamed(target: string): Link {
    const links = this.owner.links;
    const want = Buffer.from(target, 'latin1');
    for (let i = 0; i < links.length; i++) if (!links[i].replica && links[i].peerBytes.equals(want)) return links[i];
    return this.owner.addLink(target);
  }

  /** The client's Link to the node `buf[start, end)` names (host:port), made on first use. */
  private linkTo(buf: Buffer, start: number, end: number): Link {
    const links = this.owner.links;
    for (let i = 0; i < links.length; i++) {
      const t = links[i].peerBytes;
      if (t.length === end - start && buf.compare(t, 0, t.length, start, end) === 0) return links[i];
    }
    return this.owner.addLink(buf.toString('latin1', start, end));
  }

  /** Encodes entry `e` of `from` on `link` (ASKING first for ASK) and records it in its ring. */
  private encodeOn(link: Link, from: InFlight, e: number): void {
    const p = this.prepared;
    link.reserve(ASKING.length + p.maxRequestBytes);
    let len = link.outLen;
    if (from.asking[e] === 1) len += ASKING.copy(link.out, len);
    const encoder = p.commands[from.command[e]].encoder;
    if (encoder.keyCount > 1) {
      const keys = this.keys;
      for (let k = 0; k < encoder.keyCount; k++) keys[k] = from.keys[e * from.maxKeys + k];
      len += encoder.encodeKeys(link.out, len, keys, this.rand);
    } else len += encoder.encode(link.out, len, from.keyIndex[e], this.rand);
    link.outLen = len;
    link.ring.pushFrom(from, e);
    if (link.socket === null) this.owner.needsSocket(link);
  }

  /** A backoff's end for the first request waiting on `link`. */
  private armBackoff(link: Link): void {
    const w = link.waiting!;
    const wait = Math.max(0, w.notBefore[w.peek()] - performance.now());
    link.backoffTimer = setTimeout(() => {
      link.backoffTimer = null;
      if (this.owner.ended) return;
      const now = performance.now();
      while (w.len > 0 && w.notBefore[w.peek()] <= now) this.encodeOn(link, w, w.shift());
      if (w.len > 0) this.armBackoff(link);
      this.owner.pump();
    }, wait);
  }

  /** Hands every Link's encoded requests to the kernel (one write each). */
  flush(): void {
    const links = this.owner.links;
    for (let i = 0; i < links.length; i++) if (links[i].outLen > 0) links[i].flush();
  }

  /**
   * A Link a redirection made could not be opened (a node that just died, a
   * failover under way): its slots go back to the sources' routing, and what
   * was for it asks the node it was drawn for again after a backoff, until
   * --timeout.
   */
  unreachable(link: Link, text: string): void {
    const map = this.slotLink;
    if (map !== null) for (let s = 0; s < SLOTS; s++) if (map[s] === link.index) map[s] = -1;
    const now = performance.now();
    link.outLen = 0;
    if (link.backoffTimer !== null) {
      clearTimeout(link.backoffTimer);
      link.backoffTimer = null;
    }
    // What was sent there and what waits for a backoff to go there alike, as the native engine does.
    const links = this.owner.links;
    for (const from of [link.ring, link.waiting!]) {
      while (from.len > 0) {
        const e = from.shift();
        this.scratch.clear();
        this.scratch.pushFrom(from, e);
        this.resend(0, links[this.scratch.origin[0]], REDIRECT_RETRY, EMPTY, 0, 0, now, text);
      }
    }
    this.flush();
    this.owner.pump();
  }
}

const EMPTY = Buffer.alloc(0);
