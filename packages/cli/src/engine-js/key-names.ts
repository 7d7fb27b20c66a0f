/**
 * Lost writes, told per key NAME: what this run wrote (and the server
 * acknowledged) under each shape of key argument, and which keys a command
 * may have removed or expired, so a nil read is a lost write only when the
 * key it names was written and nothing since could have taken it away
 * (docs/workload.md, "Replies"). Paired with
 * crates/respbench-core/src/key_names.rs.
 *
 * A key name is the argument that holds `__key__`, literal parts included:
 * `SET x:__key__ __data__` writes the names `x:<prefix><i>`, which a
 * `GET __key__` never reads, so its nil is a miss, not a lost write. Memory:
 * one bit per key index for each name a write of the run names, one more for
 * each name a removing command names, allocated once.
 *
 * Lost overwrites, told by value generations: each write of a key (name and
 * index) carries the next generation of that key, mixed into its value
 * (values.ts contentHash). A write sent when every earlier write of its key
 * had been answered supersedes them all once the server runs it; when it is
 * acknowledged, its generation is the key's *floor*, and a read sent after
 * that which returns an older generation got a value the server had
 * acknowledged overwriting: a stale value. Writes racing each other never
 * raise the floor, so no interleaving of connections makes a healthy
 * server's reply stale. Memory: 8 bytes per key index per name written, for
 * a keyspace up to GENERATIONS_MAX_KEYSPACE (32 MiB a name).
 */
import { removesEveryKey, removesKeys, unwrittenWhen, type CommandKind, type Part, type Template, type Unwritten } from './command.js';
import { ReplyKind } from './reply.js';
import { WrittenKeys } from './values.js';

/** What KeyNames needs of a prepared command (request-source.ts PreparedCommand). */
export interface NamedCommand {
  encoder: { readonly template: Template };
  kind: CommandKind;
  /** A read answered with one value per key (MGET). */
  arrayReply: boolean;
}

/** The largest keyspace whose keys' generations a run tracks (mixed mode with --verify-get, one server). As in key_names.rs. */
export const GENERATIONS_MAX_KEYSPACE = 2 ** 22;
/** A write's tag: its generation offset (low 16 bits) and whether it was sent with no earlier write of its key unanswered. */
export const SEQUENTIAL = 0x10000;
/** A request with no generation drawn (a read, or generations not tracked). */
export const NO_GENERATION = 0xffffffff;

/** One name's keys: generations drawn, writes answered (acknowledged or refused, mod 2^16), 1 + the last sequential write's offset (0: none). */
interface Generations {
  next: Uint16Array;
  answered: Uint16Array;
  floor: Uint32Array;
}

/** Whether offset `got` is older than the floor offset `floor`, in a window of 2^15 (offsets wrap at 2^16). */
export function older(got: number, floor: number): boolean {
  const behind = (floor - got) & 0xffff;
  return behind >= 1 && behind < 0x8000;
}

/** The arguments of `template` that hold `__key__`, in order: one per key a request names. */
export function keyArguments(template: Template): Part[][] {
  return template.args.filter((parts) => parts.some((p) => p.kind === 'key'));
}

/** A key argument's shape as text: two arguments name the same keys when these are equal. */
function shapeOf(parts: Part[]): string {
  return parts.map((p) => (p.kind === 'literal' ? `L${p.bytes.toString('hex')}` : p.kind)).join(' ');
}

/** What a run knows of each key name (mixed mode with --verify-get). */
export class KeyNames {
  /** Per command, the name each of its keys is (index into `written`), in key order. */
  private readonly names: Uint16Array[];
  /** Per command: an acknowledged write of the key's value (a later read of the name must find one). */
  private readonly marks: boolean[];
  /** Per command: may delete or expire its keys (DEL, EXPIRE, SET … EX, GETDEL, …). */
  private readonly removes: boolean[];
  /** Per command: a one-key read whose nil may be a lost write. */
  private readonly checks: boolean[];
  /** Per command: a conditional write's reply that says it wrote nothing. */
  private readonly unwritten: Unwritten[];
  /** Per command: removes every key (FLUSHDB, FLUSHALL, SWAPDB). */
  private readonly flushes: boolean[];
  /** A command that removes every key was sent: no nil read is a lost write from then on. */
  private flushed = false;
  /** Per name: its keys written and acknowledged (null: no write names it). */
  private readonly written: (WrittenKeys | null)[];
  /** Per name: its keys a removing command was sent for (null: no command removes it). */
  private readonly removed: (WrittenKeys | null)[];
  /** Per name written: its keys' generations (null: not tracked). */
  private readonly generations: (Generations | null)[];

  /** `generations`: track each key's value generations (one server, keyspace up to GENERATIONS_MAX_KEYSPACE). */
  constructor(commands: NamedCommand[], keyspace: number, generations: boolean) {
    const shapes: string[] = [];
    this.names = commands.map((c) =>
      Uint16Array.from(keyArguments(c.encoder.template), (parts) => {
        const shape = shapeOf(parts);
        const at = shapes.indexOf(shape);
        return at >= 0 ? at : shapes.push(shape) - 1;
      }),
    );
    this.marks = commands.map((c) => c.kind === 'write');
    this.removes = commands.map((c) => removesKeys(c.encoder.template));
    this.checks = commands.map((c, i) => c.kind === 'read' && !c.arrayReply && this.names[i].length === 1);
    this.unwritten = commands.map((c) => unwrittenWhen(c.encoder.template));
    this.flushes = commands.map((c) => removesEveryKey(c.encoder.template));
    const usedBy = (test: boolean[], name: number) => this.names.some((n, i) => test[i] && n.includes(name));
    this.written = shapes.map((_, n) => (usedBy(this.marks, n) ? new WrittenKeys(keyspace) : null));
    this.removed = shapes.map((_, n) => (usedBy(this.removes, n) ? new WrittenKeys(keyspace) : null));
    this.generations = shapes.map((_, n) =>
      generations && usedBy(this.marks, n) ? { next: new Uint16Array(keyspace), answered: new Uint16Array(keyspace), floor: new Uint32Array(keyspace) } : null,
    );
  }

  /**
   * The generation offset the `k`-th key (`key`) of a write of `command` is
   * written with, tagged SEQUENTIAL when no earlier write of that key is
   * unanswered; NO_GENERATION when the command writes no tracked name.
   */
  drawGeneration(command: number, k: number, key: number): number {
    if (!this.marks[command]) return NO_GENERATION;
    const g = this.generations[this.names[command][k]];
    if (g === null) return NO_GENERATION;
    const offset = g.next[key];
    g.next[key] = offset + 1;
    return g.answered[key] === offset ? offset | SEQUENTIAL : offset;
  }

  /**
   * Whether a write of `command` answered `kind` (payload `buf[at, at + len)`)
   * wrote its keys: any answer but an error, unless it is a conditional
   * write's "nothing written" (Unwritten).
   */
  wrote(command: number, kind: ReplyKind, buf: Uint8Array, at: number, len: number): boolean {
    switch (this.unwritten[command]) {
      case 'never':
        return true;
      case 'zero':
        return !(kind === ReplyKind.Integer && len === 1 && buf[at] === 0x30);
      case 'nil':
        return kind !== ReplyKind.Nil;
      case 'value':
        return kind === ReplyKind.Nil;
    }
  }

  /**
   * A write of `command` for key `first` (or the keys `keys[at..at+keyCount)`),
   * its first key's tag `tag`, was answered: `acknowledged` (not an error
   * reply) marks its keys written, and a sequential write's generation
   * becomes its key's floor.
   */
  onWriteAnswered(command: number, first: number, keys: Float64Array, at: number, keyCount: number, tag: number, acknowledged: boolean): void {
    if (!this.marks[command]) return;
    const names = this.names[command];
    for (let k = 0; k < keyCount; k++) {
      const key = keyCount === 1 ? first : keys[at + k];
      if (acknowledged) this.written[names[k]]?.add(key);
      const g = this.generations[names[k]];
      if (g === null) continue;
      g.answered[key]++;
      // Sequential writes of a key are answered in the order sent: the last one stored is the newest.
      if (acknowledged && keyCount === 1 && tag !== NO_GENERATION && (tag & SEQUENTIAL) !== 0) g.floor[key] = (tag & 0xffff) + 1;
    }
  }

  /** The generations drawn so far for the key a read of `command` names (mod 2^16), or -1 when its generations are not tracked. */
  nextOf(command: number, key: number): number {
    if (!this.checks[command]) return -1;
    const g = this.generations[this.names[command][0]];
    return g === null ? -1 : g.next[key];
  }

  /** The floor a read of `command` for `key` goes out with: 1 + the offset of the key's newest acknowledged sequential write, 0 when none. */
  floorOf(command: number, key: number): number {
    if (!this.checks[command]) return 0;
    const g = this.generations[this.names[command][0]];
    return g === null ? 0 : g.floor[key];
  }

  /**
   * Request `command` for `keys[0..keyCount)` is about to go out. A removing
   * command marks its keys removed now (before the server can act on it); a
   * read returns whether its key was written and acknowledged before it went out.
   */
  onSend(command: number, keys: Float64Array, keyCount: number): boolean {
    const names = this.names[command];
    if (this.flushes[command]) this.flushed = true;
    if (this.removes[command]) {
      for (let k = 0; k < keyCount; k++) this.removed[names[k]]?.add(keys[k]);
    }
    if (!this.checks[command]) return false;
    const written = this.written[names[0]];
    return written !== null && written.has(keys[0]);
  }

  /**
   * A read of `key` by `command`, written before it went out, found nil:
   * lost, unless a command that removes the name was sent meanwhile (the
   * server may have run it first, whatever the order of the replies).
   */
  isLost(command: number, key: number): boolean {
    if (this.flushed) return false;
    const removed = this.removed[this.names[command][0]];
    return removed === null || !removed.has(key);
  }
}
