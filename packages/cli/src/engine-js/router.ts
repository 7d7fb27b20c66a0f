/**
 * --cluster: which of a client's Links a request goes to, and what a
 * redirection does. The client starts with one Link per primary (each fed by
 * that primary's RequestSource, as CRC16 slot ownership splits the stream);
 * a MOVED or ASK names a node, and the request is re-sent on the client's
 * Link to it (made and opened on first use), ASK after ASKING; a MOVED also
 * sends the slot's later requests straight there, and when the map did not
 * say so already, asks the phase's TopologyRefresh for the whole map, which
 * it then applies (applyTopology) to every slot. TRYAGAIN and CLUSTERDOWN
 * send the request again on the Link that answered, after a backoff. A request counts as the error reply
 * it got after more than MAX_REDIRECTIONS MOVED/ASK in a row (a loop), or
 * when its next send would come past 3/4 of --timeout from its first send,
 * as the native engine does. A single server has no
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
import type { NodeTally, Tally } from './tally.js';
import type { SlotMap, TopologyListener, TopologyRefresh } from './topology-refresh.js';

/** Hash slots of a cluster. */
const SLOTS = 16384;

export const REDIRECT_NONE = 0;
export const REDIRECT_MOVED = 1;
export const REDIRECT_ASK = 2;
export const REDIRECT_RETRY = 3;

/**
 * MOVED / ASK replies one request follows in a row (no TRYAGAIN or
 * CLUSTERDOWN between them) before it counts as a redirection loop: as Jedis
 * (maxAttempts 5) and Lettuce (maxRedirects 5). A real chain is one or two;
 * a ping-pong gives up after its backoffs (10 + 20 + 40 ms), not at --timeout.
 */
export const MAX_REDIRECTIONS = 5;
/** The share of --timeout, from a request's first send, within which it may go again (the rest is left for the last try's reply). */
export const RESEND_BUDGET = 3 / 4;
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

/**
 * Which redirection an error reply is (MOVED, ASK, TRYAGAIN or CLUSTERDOWN),
 * or REDIRECT_NONE. A MOVED or ASK must be whole, `MOVED <slot 0..16383>
 * <host>:<port 1..65535>` (an empty host: the node asked); one that is not
 * (`MOVED abc`) is an error reply like any other, counted once.
 */
export function redirectKind(buf: Buffer, start: number, len: number): number {
  if (startsWith(buf, start, len, 'MOVED ')) return wellFormed(buf, start + 6, start + len) ? REDIRECT_MOVED : REDIRECT_NONE;
  if (startsWith(buf, start, len, 'ASK ')) return wellFormed(buf, start + 4, start + len) ? REDIRECT_ASK : REDIRECT_NONE;
  if (startsWith(buf, start, len, 'TRYAGAIN') || startsWith(buf, start, len, 'CLUSTERDOWN')) return REDIRECT_RETRY;
  return REDIRECT_NONE;
}

/** `buf[at, end)` is `<slot> <host>:<port>` with a slot of the cluster and a port number. */
function wellFormed(buf: Buffer, at: number, end: number): boolean {
  const space = buf.indexOf(32, at);
  if (space < 0 || space >= end) return false;
  let colon = end - 1;
  while (colon > space && buf[colon] !== 58) colon--;
  if (colon === space) return false;
  for (let i = space + 1; i < colon; i++) if (buf[i] <= 32 || buf[i] === 127) return false;
  const slot = number(buf, at, space);
  const port = number(buf, colon + 1, end);
  return slot >= 0 && slot < SLOTS && port >= 1 && port <= 65535;
}

/** The decimal number of 1 to 5 digits `buf[at, end)` holds, or -1. */
function number(buf: Buffer, at: number, end: number): number {
  if (end <= at || end - at > 5) return -1;
  let n = 0;
  for (let i = at; i < end; i++) {
    const d = buf[i] - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
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
  /** Per node of the start map, where its source's Link goes (its label; another primary's after --reconnect moved it). */
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

  /** --reconnect: the Link of start-map node `node`'s source opened again at `label` (another primary): a refreshed map sends that node's slots there only when `label` owns them. */
  rehome(node: number, label: string): void {
    this.sourceLabels[node] = label;
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
    const scratch = this.scratch;
    scratch.clear();
    scratch.pushFrom(link.ring, e);
    this.resend(0, link, kind, buf, s.payloadStart, s.payloadLen, now, null);
    return true;
  }

  /**
   * Re-sends scratch entry `e` as the reply `buf[start, start + len)` from
   * `answered` says (or, `why` given, as its node could not be reached:
   * again to the node it was drawn for, nothing counted): MOVED / ASK to the
   * node named, a retry on `answered` after a backoff. Each MOVED, ASK,
   * TRYAGAIN and CLUSTERDOWN counts in its kind's total and in the row of
   * the node that sent it, so the rows add up to the totals. Given up (the
   * error reply it got) after more than MAX_REDIRECTIONS MOVED/ASK in a row,
   * or when its next send would come past RESEND_BUDGET of --timeout from
   * its first send.
   */
  private resend(e: number, answered: Link, kind: number, buf: Buffer, start: number, len: number, now: number, why: string | null): void {
    const c = this.tally.counters;
    const R = this.scratch;
    const node = why === null ? answered.node : null;
    if (why === null) {
      if (kind === REDIRECT_MOVED) c.moved++;
      else if (kind === REDIRECT_ASK) c.asked++;
      else c.retried++;
      if (node !== null) node.redirections++;
    }
    const text = () => why ?? buf.toString('latin1', start, start + Math.min(len, 300));
    let to: Link;
    if (kind === REDIRECT_MOVED || kind === REDIRECT_ASK) {
      const hops = ++R.hops[e];
      if (hops > MAX_REDIRECTIONS) {
        this.giveUp(e, node, now, `redirected ${hops} times in a row, the last: ${answered.peer} answered ${text()} (a redirection loop: --cluster follows at most ${MAX_REDIRECTIONS} MOVED/ASK in a row)`);
        return;
      }
      // "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" (whole: see redirectKind)
      const end = start + len;
      let space = end - 1;
      while (space > start && buf[space] !== 32) space--;
      to = this.linkTo(buf, space + 1, end);
      if (kind === REDIRECT_MOVED) {
        let slot = 0;
        for (let i = start + 6; i < space; i++) slot = slot * 10 + buf[i] - 48;
        // A MOVED the map did not already say: the map is stale, ask for the whole of it.
        if (this.refresh !== null && this.linkOf(slot) !== to.index) {
          this.refresh.request(to.peer);
          this.refresh.shareMoved(this, slot, to.peerBytes.toString('latin1'));
        }
        this.slotMoved(slot, to.index);
      }
      R.asking[e] = kind === REDIRECT_ASK ? 1 : 0;
      // Two nodes sending a request to each other while a slot changes hands: wait before the third hop.
      R.notBefore[e] = hops <= FREE_HOPS ? 0 : now + backoffMs(hops - FREE_HOPS);
    } else {
      R.hops[e] = 0;
      R.asking[e] = 0;
      const retries = R.retries[e] < 255 ? ++R.retries[e] : 255;
      R.notBefore[e] = now + backoffMs(retries);
      to = answered;
    }
    const budget = this.timeoutMs * RESEND_BUDGET;
    const sentAt = R.sentAt[e];
    if (Math.max(now, R.notBefore[e]) - sentAt > budget) {
      this.giveUp(e, node, now, `${text()} (still, after ${R.retries[e]} retries in ${Math.round(now - sentAt)} ms: --cluster sends a request again for at most ${Math.round(budget)} ms, 3/4 of --timeout, from its first send)`);
      return;
    }
    if (R.notBefore[e] > now) {
      to.waiting!.pushFrom(R, e);
      if (to.backoffTimer === null) this.armBackoff(to);
      if (to.socket === null) this.owner.needsSocket(to);
    } else this.encodeOn(to, R, e);
  }

  /** Scratch entry `e` counts as the error reply it got (`text` says why), in `node`'s row. */
  private giveUp(e: number, node: NodeTally | null, now: number, text: string): void {
    const origin = this.owner.links[this.scratch.origin[e]];
    origin.charged--;
    // No node answered (its node could not be reached): it counts in the row of the node it was drawn for.
    this.tally.countGivenUp(this.scratch, e, now, text, node ?? origin.node);
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
