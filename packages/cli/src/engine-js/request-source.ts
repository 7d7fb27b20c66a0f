/**
 * What to send next, per connection: the mode, the key stream and the
 * encoders put together. A `PreparedPlan` is a Plan made ready to send; each
 * connection owns a `RequestSource` made from it, asks it for the next
 * request's bytes and gets back what it must remember about that request
 * (op, key hash, key index) for when the reply comes. Paired with
 * crates/respbench-core/src/request_source.rs.
 */
import { CommandEncoder, inlineForm, parseTemplate, randIntAsText, type Template } from './command.js';
import { KeyChooser, KeyStream, RAND_INT_SALT, requestsForConnection, writeKey } from './keys.js';
import { slotOwners, type Plan } from './plan.js';
import { ValueFactory, VERIFY_MIN_VALUE_SIZE, WRITTEN_KEYS_MAX_KEYSPACE, WrittenKeys } from './values.js';

/** Whether a request was a write or a read: decides how its reply counts. */
export const OP_SET = 0;
export const OP_GET = 1;
export type Op = typeof OP_SET | typeof OP_GET;

/**
 * What the engine remembers about one request until its reply arrives. The
 * source returns the same object from every `next` (no allocation per
 * request): copy the fields out before asking for the next one.
 */
export interface Request {
  /** Bytes the request took in the output buffer. */
  len: number;
  op: Op;
  keyHash: number;
  keyIndex: number;
}

/**
 * The order a source walks keys in: the timed run draws from the key stream;
 * a get-mode preload of the whole keyspace writes c, c+C, … on connection c;
 * a preload of a keyspace larger than the run replays the run's own key
 * stream with the write command.
 */
type Order = 'run' | 'preload-all' | 'preload-replay';

/**
 * --cluster, time-bound phases: requests of other primaries a source walks
 * past in one call before it returns "nothing now" (length 0, `remaining`
 * left as it is), so a node that owns none of the keys does not spin.
 */
export const MAX_SKIPS_PER_CALL = 4096;

/**
 * --read-from replica|any: which side of a node's share a source sends.
 * A connection whose reads of a primary go to a replica has two sources for
 * it, walking the same stream: the writes (to the primary) and the reads
 * (to the replica); together they send the node's share once.
 */
export const SEND_ALL = 0;
export const SEND_WRITES = 1;
export const SEND_READS = 2;
export type Side = typeof SEND_ALL | typeof SEND_WRITES | typeof SEND_READS;

/**
 * One connection's sequence of requests for one phase. Under --cluster each
 * connection has one source per primary (`node`), each walking the whole key
 * stream of the connection and keeping only the requests whose key's slot
 * that primary owns: together they send exactly the stream a single server
 * would get, each request to its owner (docs/design.md, cluster). A source
 * with nothing left for its node returns a request of length 0 and sets
 * `remaining` to 0.
 */
export class RequestSource {
  /** Requests of the connection's stream not yet walked (the node's share of them under --cluster). */
  remaining: number;
  private readonly request: Request = { len: 0, op: OP_SET, keyHash: 0, keyIndex: 0 };
  private readonly keys: KeyStream;
  private readonly chooser: KeyChooser;
  private readonly randInts: KeyStream;
  private sequential: number;

  constructor(
    private readonly prepared: PreparedPlan,
    private readonly order: Order,
    connection: number,
    count: number,
    /** --cluster: the primary this source sends to; -1 sends everything. */
    private readonly node = -1,
    /** --read-from: the writes or the reads of the node's share only (SEND_ALL: both). */
    private readonly side: Side = SEND_ALL,
  ) {
    const plan = prepared.plan;
    this.remaining = count;
    this.keys = new KeyStream(plan.seed, connection);
    this.chooser = new KeyChooser(plan, plan.keyspace, connection, plan.connections);
    this.randInts = new KeyStream((plan.seed ^ RAND_INT_SALT) >>> 0, connection);
    this.sequential = connection;
  }

  /**
   * Encodes the next request at `at` (`out` has at least maxRequestBytes
   * there) and describes it. The returned object is reused by the next call.
   */
  next(out: Buffer, at: number): Request {
    const p = this.prepared;
    const plan = p.plan;
    const owners = this.node >= 0 ? p.slotOwners : null;
    let isSet: boolean;
    let keyIndex: number;
    let skipped = 0;
    for (;;) {
      if (this.remaining <= 0) {
        // --cluster: an earlier request of this batch walked to the stream's end.
        this.request.len = 0;
        return this.request;
      }
      this.remaining--;
      if (this.order === 'preload-all') {
        isSet = true;
        keyIndex = this.sequential;
        this.sequential += plan.connections;
      } else {
        // Preload replays a get run's stream, which has no mixed-mode draws.
        isSet = plan.mode === 'mixed' ? this.keys.nextIsSet(plan.setRatio) : plan.mode === 'set' || this.order === 'preload-replay';
        keyIndex = this.chooser.next(this.keys);
      }
      if (owners === null) break;
      const encoder = isSet ? p.setEncoder : p.getEncoder;
      const slot = encoder.keySlot(keyIndex);
      const mine = slot < 0 || owners[slot] === this.node;
      if (mine && (this.side === SEND_ALL || (this.side === SEND_WRITES) === isSet)) break;
      // Another primary's request (or the other side's): its draws are taken, its bytes not written.
      encoder.skipDraws(this.randInts);
      if (this.remaining === Infinity && ++skipped === MAX_SKIPS_PER_CALL) {
        // A time-bound stream may hold no key of this node (a {tag} prefix): nothing now, ask later.
        this.request.len = 0;
        return this.request;
      }
    }
    const encoder = isSet ? p.setEncoder : p.getEncoder;
    const r = this.request;
    r.len = encoder.encode(out, at, keyIndex, this.randInts);
    r.op = isSet ? OP_SET : OP_GET;
    r.keyHash = encoder.lastKeyHash;
    r.keyIndex = keyIndex;
    return r;
  }
}

/** A Plan made ready to send: templates parsed, encoders and value table built. */
export class PreparedPlan {
  readonly values: ValueFactory;
  readonly setEncoder: CommandEncoder;
  readonly getEncoder: CommandEncoder;
  readonly verify: boolean;
  /** Get mode with --verify-get: a nil read fails verification (every key read was written first). */
  readonly missFailsVerify: boolean;
  /** Mixed mode with --verify-get, keyspace up to WRITTEN_KEYS_MAX_KEYSPACE: the keys written and acknowledged so far, across phases. */
  readonly written: WrittenKeys | null;
  readonly maxRequestBytes: number;
  /** Untimed writes before a get run: every key when the keyspace is no larger than the run, else the run's own keys. */
  readonly preloadTotal: number;
  /** --cluster: slot → index of the primary that owns it; null for one server. */
  readonly slotOwners: Uint16Array | null;
  private readonly prefix: Buffer;

  constructor(readonly plan: Plan) {
    // The CLI refuses this first, naming the flags (validate.ts).
    if (plan.verifyGet && plan.valueSizeMin < VERIFY_MIN_VALUE_SIZE) {
      throw new Error(`verifyGet needs valueSizeMin of at least ${VERIFY_MIN_VALUE_SIZE}, got ${plan.valueSizeMin}`);
    }
    this.values = new ValueFactory({ min: plan.valueSizeMin, max: plan.valueSizeMax });
    this.prefix = Buffer.from(plan.keyPrefix);
    const template = (source: string, role: 'set' | 'get'): Template => {
      const parsed = parseTemplate(source, role, plan.literalCommands);
      const drawn = plan.randIntLiteral ? randIntAsText(parsed) : parsed;
      return plan.inlineCommands ? inlineForm(drawn) : drawn;
    };
    this.setEncoder = new CommandEncoder(template(plan.setCmd, 'set'), this.prefix, this.values, plan.keyspace);
    this.getEncoder = new CommandEncoder(template(plan.getCmd, 'get'), this.prefix, this.values, plan.keyspace);
    this.verify = plan.verifyGet;
    this.missFailsVerify = plan.verifyGet && plan.mode === 'get';
    this.written = tracksWrittenKeys(plan) ? new WrittenKeys(plan.keyspace) : null;
    this.maxRequestBytes = Math.max(this.setEncoder.maxBytes(), this.getEncoder.maxBytes());
    // A time-bound phase (the run, or a warmup) may read any key, so it preloads the whole keyspace.
    const timeBound = plan.durationMs > 0 || plan.warmupMs > 0;
    const reads = timeBound ? plan.keyspace : Math.min(plan.keyspace, plan.requests);
    this.preloadTotal = plan.mode === 'get' && plan.preload ? reads : 0;
    this.slotOwners = plan.cluster ? slotOwners(plan.cluster) : null;
  }

  /** The measured (or warmup) stream of a connection; unbounded when time ends the phase. */
  /** `node`: --cluster, the primary whose share of the stream this source sends (-1: all of it). */
  runSource(connection: number, timeBound: boolean, node = -1, side: Side = SEND_ALL): RequestSource {
    const count = timeBound ? Infinity : requestsForConnection(this.plan.requests, this.plan.connections, connection);
    return new RequestSource(this, 'run', connection, count, node, side);
  }

  preloadSource(connection: number, node = -1): RequestSource {
    const all = this.plan.keyspace <= this.plan.requests || this.plan.durationMs > 0 || this.plan.warmupMs > 0;
    const count = requestsForConnection(this.preloadTotal, this.plan.connections, connection);
    return new RequestSource(this, all ? 'preload-all' : 'preload-replay', connection, count, node);
  }

  /** `<prefix><index>` as text (for messages; not the hot path). */
  keyText(index: number): string {
    return this.plan.keyPrefix + String(index);
  }

  /** The value for key `index` (for messages; not the hot path). */
  valueBytes(index: number): Buffer {
    const key = Buffer.allocUnsafe(this.prefix.length + 20);
    const len = writeKey(key, 0, this.prefix, index);
    return this.values.valueForKey(key, 0, len);
  }
}

/** Whether a run tells lost writes from misses: mixed mode, --verify-get, and a keyspace small enough for one bit per key. */
export function tracksWrittenKeys(plan: Plan): boolean {
  return plan.verifyGet && plan.mode === 'mixed' && plan.keyspace <= WRITTEN_KEYS_MAX_KEYSPACE;
}
