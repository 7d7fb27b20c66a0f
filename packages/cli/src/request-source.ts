/**
 * What to send next, per connection: the mode, the key stream and the
 * encoders put together. Each connection owns a RequestSource; the engine
 * asks it for the next request's bytes and reads back what it must remember
 * about that request (kind, key hash, key index) for when the reply comes.
 */
import { CommandEncoder, parseTemplate, type Template } from './command.js';
import type { Plan } from './plan.js';
import { fnv1a32, KeyChooser, KeyStream, requestsForConnection, ValueFactory, writeKey } from './workload.js';

export const OP_SET = 0;
export const OP_GET = 1;
/** XORed into the seed for the stream that fills __rand_int__, so it never shifts the key stream. */
export const RAND_INT_SALT = 0x52414e44;

type Order = 'run' | 'preload-all' | 'preload-replay';

export class RequestSource {
  remaining: number;
  lastKind = OP_SET;
  lastKeyHash = 0;
  lastKeyIndex = 0;
  private readonly keys: KeyStream;
  private readonly chooser: KeyChooser;
  private readonly randInts: KeyStream;
  private sequential: number;

  constructor(
    private readonly workload: Workload,
    private readonly order: Order,
    connection: number,
    count: number,
  ) {
    const plan = workload.plan;
    this.remaining = count;
    this.keys = new KeyStream(plan.seed, connection);
    this.chooser = new KeyChooser(plan, plan.keyspace, connection, plan.connections);
    this.randInts = new KeyStream((plan.seed ^ RAND_INT_SALT) >>> 0, connection);
    this.sequential = connection;
  }

  /** Encodes the next request at `at`; returns its length. */
  next(out: Buffer, at: number): number {
    const w = this.workload;
    const plan = w.plan;
    this.remaining--;
    let isSet: boolean;
    let keyIndex: number;
    if (this.order === 'preload-all') {
      isSet = true;
      keyIndex = this.sequential;
      this.sequential += plan.connections;
    } else {
      // Preload replays a get run's stream, which has no mixed-mode draws.
      isSet = plan.mode === 'mixed' ? this.keys.nextIsSet(plan.setRatio) : plan.mode === 'set' || this.order === 'preload-replay';
      keyIndex = this.chooser.next(this.keys);
    }
    const encoder = isSet ? w.setEncoder : w.getEncoder;
    const n = encoder.encode(out, at, keyIndex, this.randInts);
    this.lastKind = isSet ? OP_SET : OP_GET;
    this.lastKeyHash = encoder.lastKeyHash;
    this.lastKeyIndex = keyIndex;
    return n;
  }
}

/** A Plan made ready to send: templates parsed, encoders and value table built. */
export class Workload {
  readonly values: ValueFactory;
  readonly setTemplate: Template;
  readonly getTemplate: Template;
  readonly setEncoder: CommandEncoder;
  readonly getEncoder: CommandEncoder;
  readonly verify: boolean;
  readonly maxRequestBytes: number;
  /** Untimed writes before a get run: every key when the keyspace is no larger than the run, else the run's own keys. */
  readonly preloadTotal: number;
  private readonly prefix: Buffer;

  constructor(readonly plan: Plan) {
    this.values = new ValueFactory({ min: plan.valueSizeMin, max: plan.valueSizeMax });
    this.prefix = Buffer.from(plan.keyPrefix);
    this.setTemplate = parseTemplate(plan.setCmd, 'set', plan.literalCommands);
    this.getTemplate = parseTemplate(plan.getCmd, 'get', plan.literalCommands);
    this.setEncoder = new CommandEncoder(this.setTemplate, this.prefix, this.values, plan.keyspace);
    this.getEncoder = new CommandEncoder(this.getTemplate, this.prefix, this.values, plan.keyspace);
    this.verify = plan.verifyGet;
    this.maxRequestBytes = Math.max(this.setEncoder.maxBytes(), this.getEncoder.maxBytes());
    // A time-bound phase (the run, or a warmup) may read any key, so it preloads the whole keyspace.
    const timeBound = plan.durationMs > 0 || plan.warmupMs > 0;
    const reads = timeBound ? plan.keyspace : Math.min(plan.keyspace, plan.requests);
    this.preloadTotal = plan.mode === 'get' && plan.preload ? reads : 0;
  }

  /** The measured (or warmup) stream of a connection; unbounded when time ends the phase. */
  runSource(connection: number, timeBound: boolean): RequestSource {
    const count = timeBound ? Infinity : requestsForConnection(this.plan.requests, this.plan.connections, connection);
    return new RequestSource(this, 'run', connection, count);
  }

  preloadSource(connection: number): RequestSource {
    const all = this.plan.keyspace <= this.plan.requests || this.plan.durationMs > 0 || this.plan.warmupMs > 0;
    const count = requestsForConnection(this.preloadTotal, this.plan.connections, connection);
    return new RequestSource(this, all ? 'preload-all' : 'preload-replay', connection, count);
  }

  keyText(index: number): string {
    return this.plan.keyPrefix + String(index);
  }

  /** The value for key `index` (for messages; not the hot path). */
  valueText(index: number): Buffer {
    const key = Buffer.allocUnsafe(this.prefix.length + 20);
    const len = writeKey(key, 0, this.prefix, index);
    const h = fnv1a32(key, 0, len);
    const out = Buffer.allocUnsafe(this.values.sizeFor(h));
    this.values.writeValue(out, 0, h);
    return out;
  }
}
