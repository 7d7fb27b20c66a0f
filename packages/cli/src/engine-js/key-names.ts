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
 */
import { removesKeys, type Part, type Template } from './command.js';
import type { PreparedCommand } from './request-source.js';
import { WrittenKeys } from './values.js';

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
  /** Per name: its keys written and acknowledged (null: no write names it). */
  private readonly written: (WrittenKeys | null)[];
  /** Per name: its keys a removing command was sent for (null: no command removes it). */
  private readonly removed: (WrittenKeys | null)[];

  constructor(commands: PreparedCommand[], keyspace: number) {
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
    const usedBy = (test: boolean[], name: number) => this.names.some((n, i) => test[i] && n.includes(name));
    this.written = shapes.map((_, n) => (usedBy(this.marks, n) ? new WrittenKeys(keyspace) : null));
    this.removed = shapes.map((_, n) => (usedBy(this.removes, n) ? new WrittenKeys(keyspace) : null));
  }

  /**
   * Request `command` for `keys[0..keyCount)` is about to go out. A removing
   * command marks its keys removed now (before the server can act on it); a
   * read returns whether its key was written and acknowledged before it went out.
   */
  onSend(command: number, keys: Float64Array, keyCount: number): boolean {
    const names = this.names[command];
    if (this.removes[command]) {
      for (let k = 0; k < keyCount; k++) this.removed[names[k]]?.add(keys[k]);
    }
    if (!this.checks[command]) return false;
    const written = this.written[names[0]];
    return written !== null && written.has(keys[0]);
  }

  /** Request `command` for key `first` (or the keys `keys[at..at+keyCount)`) was acknowledged. */
  onAcknowledged(command: number, first: number, keys: Float64Array, at: number, keyCount: number): void {
    if (!this.marks[command]) return;
    const names = this.names[command];
    if (keyCount === 1) this.written[names[0]]?.add(first);
    else for (let k = 0; k < keyCount; k++) this.written[names[k]]?.add(keys[at + k]);
  }

  /**
   * A read of `key` by `command`, written before it went out, found nil:
   * lost, unless a command that removes the name was sent meanwhile (the
   * server may have run it first, whatever the order of the replies).
   */
  isLost(command: number, key: number): boolean {
    const removed = this.removed[this.names[command][0]];
    return removed === null || !removed.has(key);
  }
}
