/**
 * What to send next, per connection: the mode, the key stream and the
 * encoders put together. A `PreparedPlan` is a Plan made ready to send; each
 * connection owns a `RequestSource` made from it, asks it for the next
 * request's bytes and gets back what it must remember about that request
 * (op, key hash, key index) for when the reply comes. Paired with
 * crates/respbench-core/src/request_source.rs.
 */
import { ARRAY_READS, CommandEncoder, commandKind, inlineForm, parseMixTemplate, parseTemplate, randIntAsText, templateName, TemplateError, type CommandKind, type Part, type Template } from './command.js';
import { fnv1a32, KeyChooser, KeyStream, RAND_INT_SALT, requestsForConnection, writeKey, type KeyPattern } from './keys.js';
import { slotOwners, type Plan } from './plan.js';
import { GENERATIONS_MAX_KEYSPACE, KeyNames, NO_GENERATION } from './key-names.js';
import { ValueFactory, VERIFY_MIN_VALUE_SIZE, WRITTEN_KEYS_MAX_KEYSPACE } from './values.js';

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
  /** Which of PreparedPlan.commands it is (for --mode: 0 the write, 1 the read). */
  command: number;
  keyHash: number;
  /** The (first) key's index. */
  keyIndex: number;
  /** Keys the request names: 1, or k for a multi-key command (its keys are `keys[0..keyCount)`). */
  keyCount: number;
  /** The source's key buffer: valid until the next call. */
  keys: Float64Array;
  /** --cluster: the key's hash slot, as the source routed it (-1 without --cluster). */
  slot: number;
  /** A write's generation tag (key-names.ts drawGeneration), a read's floor when drawn; NO_GENERATION when not tracked. */
  generation: number;
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
 * --cluster: the largest keyspace whose slots are remembered per key index
 * (2 bytes a key, 8 MiB per distinct key argument). Every source of a
 * connection walks its whole stream and needs each key's slot; with the memo
 * a key is written out and hashed once per run, not once per source and
 * request. Larger keyspaces hash every time. As SLOT_MEMO_MAX_KEYSPACE in
 * request_source.rs.
 */
export const SLOT_MEMO_MAX_KEYSPACE = 2 ** 22;

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
  /**
   * Requests of the connection's stream walked so far, this source's and
   * (under --cluster) the other primaries' alike: the request `next` just
   * returned is number `walked - 1` of the stream (--rate's schedule).
   */
  walked = 0;
  private readonly request: Request;
  /** The keys of the request being encoded (a multi-key command draws several). */
  private readonly keyBuf: Float64Array;
  private readonly keys: KeyStream;
  /** The run's key pattern at 0, then one per mix command with a pattern of its own (PreparedCommand.chooser). */
  private readonly choosers: KeyChooser[];
  private readonly randInts: KeyStream;
  private sequential: number;
  /**
   * The command every request of this source sends when the choice is made
   * once (plainNext): one server, one command, one key, no generations;
   * -1 for the general path.
   */
  private readonly plainCommand: number;

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
    this.keyBuf = new Float64Array(prepared.maxKeys);
    this.request = { len: 0, op: OP_SET, command: 0, keyHash: 0, keyIndex: 0, keyCount: 1, keys: this.keyBuf, slot: -1, generation: NO_GENERATION };
    this.keys = new KeyStream(plan.seed, connection);
    this.choosers = [plan, ...prepared.commands.filter((c) => c.keyPattern !== null).map((c) => ({ ...plan, keyPattern: c.keyPattern as KeyPattern }))].map(
      (spec) => new KeyChooser(spec, plan.keyspace, connection, plan.connections),
    );
    this.randInts = new KeyStream((plan.seed ^ RAND_INT_SALT) >>> 0, connection);
    this.sequential = connection;
    const command = order === 'run' ? (prepared.drawsCommand ? -1 : prepared.fixedCommand) : 0;
    const plain = node < 0 && !(prepared.keyGenerations && prepared.keyNames !== null) && command >= 0 && prepared.commands[command].encoder.keyCount === 1;
    this.plainCommand = plain ? command : -1;
  }

  /**
   * Encodes the next request at `at` (`out` has at least maxRequestBytes
   * there) and describes it. The returned object is reused by the next call.
   */
  next(out: Buffer, at: number): Request {
    if (this.plainCommand >= 0) return this.plainNext(out, at, this.plainCommand);
    const p = this.prepared;
    const plan = p.plan;
    const owners = this.node >= 0 ? p.slotOwners : null;
    const keys = this.keyBuf;
    let command: number;
    let keyCount: number;
    let skipped = 0;
    let slot = -1;
    for (;;) {
      if (this.remaining <= 0) {
        // --cluster: an earlier request of this batch walked to the stream's end.
        this.request.len = 0;
        return this.request;
      }
      this.remaining--;
      this.walked++;
      if (this.order === 'preload-all') {
        command = 0;
        keyCount = p.commands[0].encoder.keyCount;
        for (let k = 0; k < keyCount; k++) {
          keys[k] = this.sequential;
          this.sequential += plan.connections;
        }
      } else {
        // preload-replay replays a get run's stream (get mode: no command draws) with the write command.
        // The run: the command first, then its keys, from the same stream (docs/workload.md, "Command mixes").
        command = this.order === 'run' ? (p.drawsCommand ? p.commandFor(this.keys.nextU32()) : p.fixedCommand) : 0;
        const chooser = this.choosers[p.commands[command].chooser];
        keyCount = p.commands[command].encoder.keyCount;
        for (let k = 0; k < keyCount; k++) keys[k] = chooser.next(this.keys);
      }
      if (owners === null) break;
      // The drawn command's key argument decides; a multi-key command's keys
      // share the first one's slot (the CLI refuses them otherwise).
      const c = p.commands[command];
      const encoder = c.encoder;
      // The side first: it is a comparison, the slot a key written out and hashed.
      if (this.side === SEND_ALL || (this.side === SEND_WRITES) === (c.op === OP_SET)) {
        slot = p.keySlot(command, keys[0]);
        if (owners[slot] === this.node) break;
      }
      // Another primary's request (or the other side's): its draws are taken, its bytes not written.
      encoder.skipDraws(this.randInts);
      if (this.remaining === Infinity && ++skipped === MAX_SKIPS_PER_CALL) {
        // A time-bound stream may hold no key of this node (a {tag} prefix): nothing now, ask later.
        this.request.len = 0;
        return this.request;
      }
    }
    const c = p.commands[command];
    const r = this.request;
    r.generation = NO_GENERATION;
    const names = p.keyGenerations ? p.keyNames : null;
    if (names !== null) {
      if (c.op === OP_GET) r.generation = names.floorOf(command, keys[0]);
      else {
        // Each key's value carries its next generation (lost overwrites, key-names.ts).
        const generations = c.encoder.generations;
        for (let k = 0; k < keyCount; k++) {
          const tag = names.drawGeneration(command, k, keys[k]);
          generations[k] = (p.values.generation + (tag === NO_GENERATION ? 0 : tag & 0xffff)) >>> 0;
          if (k === 0) r.generation = tag;
        }
      }
    }
    r.len = c.encoder.encodeKeys(out, at, keys, this.randInts);
    r.op = c.op;
    r.command = command;
    r.keyHash = c.encoder.lastKeyHash;
    r.keyIndex = keys[0];
    r.keyCount = keyCount;
    r.slot = slot;
    return r;
  }

  /** next() for a source whose every request is `command` with one key, drawn (or the preload's next in turn): no other branch taken. */
  private plainNext(out: Buffer, at: number, command: number): Request {
    const r = this.request;
    if (this.remaining <= 0) {
      r.len = 0;
      return r;
    }
    this.remaining--;
    this.walked++;
    const c = this.prepared.commands[command];
    let key: number;
    if (this.order === 'preload-all') {
      key = this.sequential;
      this.sequential += this.prepared.plan.connections;
    } else key = this.choosers[c.chooser].next(this.keys);
    this.keyBuf[0] = key;
    r.len = c.encoder.encodeKeys(out, at, this.keyBuf, this.randInts);
    r.op = c.op;
    r.command = command;
    r.keyHash = c.encoder.lastKeyHash;
    r.keyIndex = key;
    r.keyCount = 1;
    r.slot = -1;
    r.generation = NO_GENERATION;
    return r;
  }
}

/** One command as a run sends it: its encoder, how its replies count, which key chooser it draws from. */
export interface PreparedCommand {
  /** Its row's name: the command name, upper case, numbered when two share it (GET#1, GET#2). */
  name: string;
  encoder: CommandEncoder;
  /** OP_GET for a read (checked by --verify-get), OP_SET for the rest. */
  op: Op;
  kind: CommandKind;
  weight: number;
  /** Its own key pattern, or null for the run's. */
  keyPattern: KeyPattern | null;
  /** Index into a RequestSource's choosers (0: the run's key pattern). */
  chooser: number;
  /** A read answered with one value per key (MGET): checked key by key. */
  arrayReply: boolean;
}

/** A Plan made ready to send: templates parsed, encoders and value table built. */
export class PreparedPlan {
  readonly values: ValueFactory;
  readonly setEncoder: CommandEncoder;
  readonly getEncoder: CommandEncoder;
  /**
   * What a request may be: a mix's commands in order, or for --mode the
   * write command then the read command (index = op, whatever the mode).
   */
  readonly commands: PreparedCommand[];
  /** True for a mix (Plan.commands). */
  readonly isMix: boolean;
  /** Whether each request draws its command (mixed mode, a mix of two or more); else it is fixedCommand. */
  readonly drawsCommand: boolean;
  readonly fixedCommand: number;
  /** Running sums of the weights (mixed mode: setRatio, 100): a draw u % total picks the first command whose sum exceeds it. */
  private readonly cumulativeWeights: Uint32Array;
  private readonly totalWeight: number;
  readonly verify: boolean;
  /** Get mode with --verify-get: a nil read fails verification (every key read was written first). */
  readonly missFailsVerify: boolean;
  /**
   * Mixed mode with --verify-get, keyspace up to WRITTEN_KEYS_MAX_KEYSPACE: per key name, the keys written and
   * acknowledged so far (across phases) and those a command may have removed.
   */
  readonly keyNames: KeyNames | null;
  /** keyNames tracks each key's value generations (one server, keyspace up to GENERATIONS_MAX_KEYSPACE): writes draw them, reads are checked against them. */
  readonly keyGenerations: boolean;
  /**
   * --value-generation N (N > 0) but a get run's own preload: a read takes any generation from N to N + 65535 (what an
   * earlier mixed run of N may have written); without it, or after the preload, N only.
   */
  readonly generationWindow: boolean;

  readonly maxRequestBytes: number;
  /** The most keys one request names (1 unless a command is multi-key). */
  readonly maxKeys: number;
  /** Scratch for keyHashOf. */
  private readonly hashScratch: Buffer;
  /** Untimed writes before a get run: every key when the keyspace is no larger than the run, else the run's own keys. */
  readonly preloadTotal: number;
  /** --cluster: slot → index of the primary that owns it; null for one server. */
  readonly slotOwners: Uint16Array | null;
  /** --cluster, keyspace up to SLOT_MEMO_MAX_KEYSPACE: per command, key index → its key argument's slot + 1 (0: not known yet); commands with the same key argument share one. */
  private readonly slotMemos: (Uint16Array | null)[];
  private readonly prefix: Buffer;

  constructor(readonly plan: Plan) {
    // The CLI refuses this first, naming the flags (validate.ts).
    if (plan.verifyGet && plan.valueSizeMin < VERIFY_MIN_VALUE_SIZE) {
      throw new Error(`verifyGet needs valueSizeMin of at least ${VERIFY_MIN_VALUE_SIZE}, got ${plan.valueSizeMin}`);
    }
    this.values = new ValueFactory({ min: plan.valueSizeMin, max: plan.valueSizeMax }, plan.valueGeneration ?? 0);
    this.prefix = Buffer.from(plan.keyPrefix);
    const template = (source: string, role: 'set' | 'get' | 'mix'): Template => {
      const parsed = role === 'mix' ? parseMixTemplate(source, plan.literalCommands) : parseTemplate(source, role, plan.literalCommands);
      const drawn = plan.randIntLiteral ? randIntAsText(parsed) : parsed;
      return plan.inlineCommands ? inlineForm(drawn) : drawn;
    };
    this.setEncoder = new CommandEncoder(template(plan.setCmd, 'set'), this.prefix, this.values, plan.keyspace);
    this.getEncoder = new CommandEncoder(template(plan.getCmd, 'get'), this.prefix, this.values, plan.keyspace);
    const mix = plan.commands ?? [];
    this.isMix = mix.length > 0;
    // As the native engine's Plan::check (the CLI refuses these first, naming the flags).
    if (mix.length > 100) throw new Error(`commands must hold at most 100 commands, got ${mix.length}`);
    if (mix.some((m) => !Number.isInteger(m.weight) || m.weight < 1 || m.weight > 1_000_000)) throw new Error('commands[].weight must be between 1 and 1000000');
    if (this.isMix) {
      let chooser = 0;
      const names = mix.map((m, i) => {
        try {
          return templateName(parseMixTemplate(m.template, plan.literalCommands));
        } catch (err) {
          throw err instanceof TemplateError ? new TemplateError(`command ${i + 1} ${err.message}`) : err;
        }
      });
      this.commands = mix.map((m, i) => {
        const t = template(m.template, 'mix');
        // A command with no key writes or reads no key of the keyspace: nothing to verify or remember (paired with request_source.rs).
        const kind = t.usesKey || plan.literalCommands ? commandKind(t) : 'other';
        const name = names.filter((n) => n === names[i]).length > 1 ? `${names[i]}#${names.slice(0, i + 1).filter((n) => n === names[i]).length}` : names[i];
        return {
          name,
          encoder: new CommandEncoder(t, this.prefix, this.values, plan.keyspace),
          op: kind === 'read' ? OP_GET : OP_SET,
          kind,
          weight: m.weight,
          keyPattern: m.keyPattern,
          chooser: m.keyPattern === null ? 0 : ++chooser,
          arrayReply: kind === 'read' && ARRAY_READS.includes(names[i]),
        };
      });
      this.drawsCommand = mix.length > 1;
      this.fixedCommand = 0;
    } else {
      const named = (source: string) => source.trim().split(/\s+/)[0]?.toUpperCase() || '?';
      this.commands = [
        { name: named(plan.setCmd), encoder: this.setEncoder, op: OP_SET, kind: 'write', weight: plan.setRatio, keyPattern: null, chooser: 0, arrayReply: false },
        { name: named(plan.getCmd), encoder: this.getEncoder, op: OP_GET, kind: 'read', weight: 100 - plan.setRatio, keyPattern: null, chooser: 0, arrayReply: ARRAY_READS.includes(named(plan.getCmd)) },
      ];
      this.drawsCommand = plan.mode === 'mixed';
      this.fixedCommand = plan.mode === 'get' ? 1 : 0;
    }
    this.cumulativeWeights = new Uint32Array(this.commands.length);
    let sum = 0;
    for (let i = 0; i < this.commands.length; i++) this.cumulativeWeights[i] = sum += this.commands[i].weight;
    this.totalWeight = sum;
    this.verify = plan.verifyGet;
    this.missFailsVerify = plan.verifyGet && plan.mode === 'get' && !this.isMix;
    // One connection: its writes of a key have one order, the same in both engines and every run
    // (with more, which racing write ends up stored decides the dataset).
    // Only a run that names a generation: without one, values stay those of earlier builds.
    const generation = plan.valueGeneration ?? 0;
    this.keyGenerations = generation > 0 && tracksWrittenKeys(plan) && plan.keyspace <= GENERATIONS_MAX_KEYSPACE && !plan.cluster && plan.connections === 1;
    this.generationWindow = generation > 0 && !(plan.verifyGet && plan.mode === 'get' && !this.isMix && plan.preload);
    this.keyNames = tracksWrittenKeys(plan) ? new KeyNames(this.commands, plan.keyspace, this.keyGenerations) : null;
    this.maxRequestBytes = Math.max(...this.commands.map((c) => c.encoder.maxBytes()));
    this.maxKeys = Math.max(...this.commands.map((c) => c.encoder.keyCount));
    this.hashScratch = Buffer.allocUnsafe(this.prefix.length + 20);
    // A time-bound phase (the run, or a warmup) may read any key, so it preloads the whole keyspace.
    const timeBound = plan.durationMs > 0 || plan.warmupMs > 0;
    // A read of several keys per request reads more keys than requests: the whole keyspace too.
    const reads = timeBound || this.multiKeyRead() ? plan.keyspace : Math.min(plan.keyspace, plan.requests);
    this.preloadTotal = plan.mode === 'get' && plan.preload && !this.isMix ? reads : 0;
    this.slotOwners = plan.cluster ? slotOwners(plan.cluster) : null;
    const memos = new Map<string, Uint16Array>();
    this.slotMemos = this.commands.map((c) => {
      const signature = c.encoder.keyArgSignature();
      if (!plan.cluster || plan.keyspace > SLOT_MEMO_MAX_KEYSPACE || signature === null) return null;
      let memo = memos.get(signature);
      if (!memo) memos.set(signature, (memo = new Uint16Array(plan.keyspace)));
      return memo;
    });
  }

  /** --cluster: the hash slot of command `command`'s key argument for key `keyIndex` (a command with no key: spreadSlot's), remembered per key index when the keyspace allows. */
  keySlot(command: number, keyIndex: number): number {
    const memo = this.slotMemos[command];
    if (memo === null || keyIndex >= memo.length) return this.commands[command].encoder.keySlot(keyIndex);
    const known = memo[keyIndex];
    if (known !== 0) return known - 1;
    const slot = this.commands[command].encoder.keySlot(keyIndex);
    memo[keyIndex] = slot + 1;
    return slot;
  }

  /** The measured (or warmup) stream of a connection; unbounded when time ends the phase. */
  /** `node`: --cluster, the primary whose share of the stream this source sends (-1: all of it). */
  runSource(connection: number, timeBound: boolean, node = -1, side: Side = SEND_ALL): RequestSource {
    const count = timeBound ? Infinity : requestsForConnection(this.plan.requests, this.plan.connections, connection);
    return new RequestSource(this, 'run', connection, count, node, side);
  }

  preloadSource(connection: number, node = -1): RequestSource {
    const all = this.plan.keyspace <= this.plan.requests || this.plan.durationMs > 0 || this.plan.warmupMs > 0 || this.multiKeyRead();
    const count = requestsForConnection(this.preloadTotal, this.plan.connections, connection);
    return new RequestSource(this, all ? 'preload-all' : 'preload-replay', connection, count, node);
  }

  /** The command a draw `u` (a u32 of the key stream) picks: u % the total weight, then the first running sum above it. */
  commandFor(u: number): number {
    const x = u % this.totalWeight;
    const sums = this.cumulativeWeights;
    let i = 0;
    while (x >= sums[i]) i++;
    return i;
  }

  /** --mode get/mixed: the read command names several keys (so a get run's preload writes every key). */
  private multiKeyRead(): boolean {
    return !this.isMix && this.commands[1].encoder.keyCount > 1;
  }

  /** The hash of key `index`'s bytes (a multi-key reply's check; no allocation). */
  keyHashOf(index: number): number {
    const len = writeKey(this.hashScratch, 0, this.prefix, index);
    return fnv1a32(this.hashScratch, 0, len);
  }

  /** Each command's op kind, in order (for OpHistograms). */
  commandOps(): number[] {
    return this.commands.map((c) => c.op);
  }

  /** `<prefix><index>` as text (for messages; not the hot path). */
  keyText(index: number): string {
    return this.plan.keyPrefix + String(index);
  }

  /**
   * Key `index` as command `command` names it, its key argument's fixed
   * text included (`SET x:__key__ …` names `x:<prefix><index>`): what a
   * verification message names (as key_name_text in prepared_plan.rs).
   */
  keyNameText(command: number, index: number): string {
    const arg = this.commands[command]?.encoder.template.args.find((parts) => parts.some((p) => p.kind === 'key'));
    if (arg === undefined) return this.keyText(index);
    const text = (p: Part): string => {
      switch (p.kind) {
        case 'literal':
          return p.bytes.toString('utf8');
        case 'key':
          return this.keyText(index);
        case 'tag':
          return String(index);
        case 'data':
          return '__data__';
        default:
          return '__rand_int__';
      }
    };
    return arg.map(text).join('');
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
  const mixed = plan.mode === 'mixed' || (plan.commands ?? []).length > 0;
  return plan.verifyGet && mixed && plan.keyspace <= WRITTEN_KEYS_MAX_KEYSPACE;
}
