/**
 * Request templates and their RESP encoding. `--set-cmd`/`--get-cmd` take a
 * bare command name (`--set-cmd HSET` means `HSET __key__ __data__`,
 * `--get-cmd HGET` means `HGET __key__`) or a template whose arguments hold the
 * placeholders `__key__`, `__data__` (from memtier) and `__rand_int__` (from
 * redis-benchmark); for the command suite's own commands (-t,
 * Plan.literalCommands) a single word is sent as it is. Arguments are split
 * on ASCII spaces and tabs and may be quoted as in redis-cli (the grammar is
 * in docs/workload.md). A template is parsed once into parts; per request an encoder
 * writes the whole RESP array (header, length headers, literal parts, key,
 * value, random numbers) into the caller's preallocated buffer. Paired with
 * crates/respbench-core/src/command.rs.
 */
import { copyBytes, fnv1a32, fmix32, KeyStream, writeDecimal, writeKey, writePadded } from './keys.js';
import { PlainRequest } from './plain-request.js';
import { keySlot, SLOTS } from './slot.js';
import { contentHash, type ValueFactory } from './values.js';

export const PLACEHOLDERS = ['__key__', '__data__', '__rand_int__', '__tag__'] as const;
const RAND_INT_DIGITS = 12;

/** One piece of an argument: fixed bytes, or a placeholder filled per request. */
export type Part =
  | { kind: 'literal'; bytes: Buffer }
  | { kind: 'key' }
  | { kind: 'data' }
  | { kind: 'randInt' }
  /** `__tag__`: the request's (first) key index in decimal, for a `{…}` hash tag (docs/workload.md): a request's keys that hold it share one slot. */
  | { kind: 'tag' };

export interface Template {
  /** The text the user gave. */
  source: string;
  args: Part[][];
  usesKey: boolean;
  usesData: boolean;
  usesRandInt: boolean;
  /** Sent in the inline form (`PING\r\n`), not as a RESP array: see inlineForm. */
  inline?: boolean;
}

export class TemplateError extends Error {}

const SPACE = 0x20;
const TAB = 0x09;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const BACKSLASH = 0x5c;

/**
 * Code points refused outside quotes (docs/workload.md, "Template grammar"):
 * C0 controls but tab, DEL and C1 controls, and the non-ASCII spaces and
 * invisible separators a copy-paste brings in. Only ASCII space and tab
 * separate arguments; inside quotes every one of these is sent as its bytes.
 */
export function refusedOutsideQuotes(cp: number): boolean {
  if (cp < 0x20) return cp !== TAB;
  if (cp >= 0x7f && cp <= 0xa0) return true;
  if (cp >= 0x2000 && cp <= 0x200d) return true;
  return cp === 0x1680 || cp === 0x180e || cp === 0x2028 || cp === 0x2029 || cp === 0x202f || cp === 0x205f || cp === 0x2060 || cp === 0x3000 || cp === 0xfeff;
}

/** `U+00A0`: how messages name a code point. */
export function codePointName(cp: number): string {
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
}

function isHex(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
}

function hexValue(b: number): number {
  return b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x61 + 10;
}

/** The code point of the UTF-8 sequence at `i` (the text is valid UTF-8) and its byte length. */
function utf8At(src: Buffer, i: number): [number, number] {
  const b = src[i];
  if (b < 0x80) return [b, 1];
  if (b < 0xe0) return [((b & 0x1f) << 6) | (src[i + 1] & 0x3f), 2];
  if (b < 0xf0) return [((b & 0x0f) << 12) | ((src[i + 1] & 0x3f) << 6) | (src[i + 2] & 0x3f), 3];
  return [((b & 0x07) << 18) | ((src[i + 1] & 0x3f) << 12) | ((src[i + 2] & 0x3f) << 6) | (src[i + 3] & 0x3f), 4];
}

/**
 * A stretch of one argument's bytes: `plain` text (unquoted or in double
 * quotes, not from an escape) may hold placeholders; single-quoted text and
 * escaped bytes never do.
 */
interface Run {
  bytes: number[];
  plain: boolean;
}

/**
 * Splits a template into arguments as redis-cli does, except that only ASCII
 * space and tab separate them (see docs/workload.md, "Template grammar").
 */
function splitArguments(src: Buffer): Run[][] {
  const args: Run[][] = [];
  const n = src.length;
  let i = 0;
  for (;;) {
    while (i < n && (src[i] === SPACE || src[i] === TAB)) i++;
    if (i === n) return args;
    const runs: Run[] = [];
    let run: Run | null = null;
    const add = (b: number, plain: boolean) => {
      if (!run || run.plain !== plain) {
        run = { bytes: [], plain };
        runs.push(run);
      }
      run.bytes.push(b);
    };
    let done = false;
    while (!done && i < n) {
      const b = src[i];
      if (b === SPACE || b === TAB) break;
      if (b === DQUOTE || b === SQUOTE) {
        // A quoted stretch is a run of its own: a placeholder is never split by a quote.
        run = null;
        const quote = b;
        i++;
        for (;;) {
          if (i === n) throw new TemplateError(`has an unclosed ${quote === DQUOTE ? 'double' : 'single'} quote`);
          const c = src[i];
          if (quote === DQUOTE && c === BACKSLASH && i + 3 < n && src[i + 1] === 0x78 && isHex(src[i + 2]) && isHex(src[i + 3])) {
            add(hexValue(src[i + 2]) * 16 + hexValue(src[i + 3]), false);
            i += 4;
          } else if (quote === DQUOTE && c === BACKSLASH && i + 1 < n) {
            const e = src[i + 1];
            add(e === 0x6e ? 0x0a : e === 0x72 ? 0x0d : e === 0x74 ? 0x09 : e === 0x62 ? 0x08 : e === 0x61 ? 0x07 : e, false);
            i += 2;
          } else if (quote === SQUOTE && c === BACKSLASH && i + 1 < n && src[i + 1] === SQUOTE) {
            add(SQUOTE, false);
            i += 2;
          } else if (c === quote) {
            i++;
            if (i < n && src[i] !== SPACE && src[i] !== TAB) throw new TemplateError('has text right after a closing quote (put a space between arguments)');
            done = true;
            break;
          } else {
            add(c, quote === DQUOTE);
            i++;
          }
        }
        run = null;
        continue;
      }
      const [cp, len] = utf8At(src, i);
      if (refusedOutsideQuotes(cp)) {
        throw new TemplateError(`has ${codePointName(cp)} outside quotes (only ASCII spaces and tabs separate arguments; quote it to send it)`);
      }
      for (let k = 0; k < len; k++) add(src[i + k], true);
      i += len;
    }
    args.push(runs);
  }
}

const PLACEHOLDER = /__[A-Za-z_]*?__/g;

/** One argument's runs as parts: placeholders found in plain runs, literals merged. */
function argumentParts(runs: Run[], used: { key: boolean; data: boolean; randInt: boolean }): Part[] {
  const parts: Part[] = [];
  let literal: number[] = [];
  const flush = () => {
    if (literal.length > 0) parts.push({ kind: 'literal', bytes: Buffer.from(literal) });
    literal = [];
  };
  for (const run of runs) {
    if (!run.plain) {
      for (const b of run.bytes) literal.push(b);
      continue;
    }
    // Placeholders are ASCII, so matching on the latin1 reading of the bytes finds them at byte offsets.
    const text = Buffer.from(run.bytes).toString('latin1');
    let last = 0;
    PLACEHOLDER.lastIndex = 0;
    for (let m = PLACEHOLDER.exec(text); m; m = PLACEHOLDER.exec(text)) {
      for (let k = last; k < m.index; k++) literal.push(run.bytes[k]);
      let part: Part;
      switch (m[0]) {
        case '__key__':
          part = { kind: 'key' };
          used.key = true;
          break;
        case '__data__':
          part = { kind: 'data' };
          used.data = true;
          break;
        case '__rand_int__':
          part = { kind: 'randInt' };
          used.randInt = true;
          break;
        case '__tag__':
          part = { kind: 'tag' };
          break;
        default:
          throw new TemplateError(`has unknown placeholder ${m[0]} (known: ${PLACEHOLDERS.join(', ')})`);
      }
      flush();
      parts.push(part);
      last = m.index + m[0].length;
    }
    for (let k = last; k < run.bytes.length; k++) literal.push(run.bytes[k]);
  }
  flush();
  return parts;
}

function hasDoubleUnderscore(parts: Part[]): boolean {
  return parts.some((p) => p.kind !== 'literal' || p.bytes.includes('__'));
}

/**
 * Parses `--set-cmd` / `--get-cmd` by the grammar in docs/workload.md
 * ("Template grammar"), the same as command.rs and test/vectors/generate.py;
 * test/vectors/workload.json ("templates") pins all three. A single argument
 * without `__` is the kvstore shape (`NAME key value` or `NAME key`).
 * `literal` (the command suite's own commands, Plan.literalCommands) sends a
 * single word as it is and needs no __key__.
 */
export function parseTemplate(source: string, role: 'set' | 'get', literal = false, keyOptional = literal): Template {
  // Text that cannot be UTF-8 (a lone surrogate from a JSON/YAML escape) has no bytes to send.
  if (/[\uD800-\uDFFF]/u.test(source)) throw new TemplateError('is not valid Unicode text (it holds a lone surrogate)');
  const split = splitArguments(Buffer.from(source, 'utf8'));
  if (split.length === 0) throw new TemplateError('is empty');
  const used = { key: false, data: false, randInt: false };
  const args = split.map((runs) => argumentParts(runs, used));
  if (!literal && args.length === 1 && !hasDoubleUnderscore(args[0])) {
    args.push([{ kind: 'key' }]);
    used.key = true;
    if (role === 'set') {
      args.push([{ kind: 'data' }]);
      used.data = true;
    }
  }
  if (args[0].some((p) => p.kind !== 'literal')) throw new TemplateError('must start with a command name, not a placeholder');
  if (args[0].length === 0) throw new TemplateError('has an empty command name');
  if (!keyOptional && !used.key) throw new TemplateError('has no __key__ placeholder');
  return { source, args, usesKey: used.key, usesData: used.data, usesRandInt: used.randInt };
}

/**
 * One --command of a mix: its role from its name (mixRole), and a command
 * with no `__key__` (`INCR ctr:__rand_int__`, `PING x`) is a command with no
 * key, sent as written — as the same words after the options are. A single
 * bare word still takes the kvstore shape (`GET` is `GET key`). Paired with
 * parse_mix_template in template.rs.
 */
export function parseMixTemplate(source: string, literal: boolean): Template {
  return parseTemplate(source, mixRole(source), literal, true);
}

/**
 * The template with every `__rand_int__` turned into the literal text
 * `__rand_int__` (Plan.randIntLiteral: redis-benchmark without -r).
 */
export function randIntAsText(template: Template): Template {
  if (!template.usesRandInt) return template;
  const text = Buffer.from('__rand_int__');
  const args = template.args.map((parts) => parts.map((p): Part => (p.kind === 'randInt' ? { kind: 'literal', bytes: text } : p)));
  return { ...template, args, usesRandInt: false };
}

/**
 * The template sent in the inline form, words and CRLF (Plan.inlineCommands:
 * redis-benchmark's PING_INLINE). Only fixed words: a key or value could hold
 * a space or CRLF, which the inline form cannot carry.
 */
export function inlineForm(template: Template): Template {
  if (template.args.some((parts) => parts.some((p) => p.kind !== 'literal'))) {
    throw new TemplateError('is sent inline, so it takes fixed words only (no placeholders)');
  }
  return { ...template, inline: true };
}

/** Why a read template's replies cannot be checked against what was written, or null. */
export function unverifiableReason(get: Template): string | null {
  if (get.usesData) return 'a read command that sends __data__ cannot be verified';
  if (get.usesRandInt) return 'a read command with __rand_int__ cannot be verified';
  return null;
}

/**
 * Which key of a request each `__key__` and `__data__` part stands for. A
 * template whose `__key__` is in two or more arguments is a multi-key
 * command (`MGET __key__ __key__`, `MSET __key__ __data__ __key__ __data__`):
 * the k-th such argument names the request's k-th key, and a `__data__` is
 * the value of the key in the nearest argument before it (the first key when
 * none is). Otherwise every part stands for the request's one key.
 * docs/workload.md, "Multi-key commands".
 */
export function keySlots(template: Template): { slots: number[][]; keyCount: number } {
  const keyArgs = template.args.filter((parts) => parts.some((p) => p.kind === 'key')).length;
  const multi = keyArgs >= 2;
  let current = -1;
  const slots = template.args.map((parts) => {
    if (multi && parts.some((p) => p.kind === 'key')) current++;
    return parts.map((p) => (multi && (p.kind === 'key' || p.kind === 'data') ? Math.max(current, 0) : 0));
  });
  return { slots, keyCount: multi ? keyArgs : 1 };
}

/**
 * --cluster: the slot a request with no key goes by (PING in the command
 * suite), picked from its key draw so such requests spread over the
 * primaries as redis-benchmark's clients, one per node, do. Paired with
 * spread_slot in command.rs.
 */
export function spreadSlot(keyIndex: number): number {
  return fmix32(keyIndex >>> 0) % SLOTS;
}

/**
 * Encodes one template per request into a caller's buffer. Keeps a scratch
 * buffer for the keys so that their hashes (and so the values) are known
 * before the length headers are written.
 */
export class CommandEncoder {
  private readonly header: Buffer;
  /** The request's keys' bytes, one stride each. */
  private readonly keyScratch: Buffer;
  private readonly stride: number;
  private readonly slots: number[][];
  /** Keys one request names: 1, or k for a multi-key template (keySlots). */
  readonly keyCount: number;
  private readonly keyLens: Int32Array;
  private readonly keyHashes: Uint32Array;
  private readonly dataLens: Int32Array;
  /** encode's one key, as encodeKeys takes keys. */
  private readonly oneKey = new Float64Array(1);
  /** The whole request of an inline template (its words, one space apart, and CRLF). */
  private readonly inlineLine: Buffer | null;
  /** Hash of the (first) key of the last encoded request (what verification needs). */
  lastKeyHash = 0;
  /** --cluster: the argument that holds __key__ or __tag__ (-1: none), and room to write it whole. */
  private readonly keyArg: number;
  private readonly slotScratch: Buffer;
  /** `__rand_int__` draws per request: a request routed elsewhere (--cluster) still takes them. */
  readonly randDraws: number;
  /**
   * The generation each key's value is written with: the run's unless the
   * source sets them before encoding (per-key generations, key-names.ts).
   */
  readonly generations: Uint32Array;
  /** A plain template's faster encoding (plain-request.ts); null: this one's general path. */
  private readonly plain: PlainRequest | null;

  constructor(
    readonly template: Template,
    private readonly prefix: Buffer,
    private readonly values: ValueFactory,
    private readonly keyspace: number,
  ) {
    this.header = Buffer.from(`*${template.args.length}\r\n`);
    const { slots, keyCount } = keySlots(template);
    this.slots = slots;
    this.keyCount = keyCount;
    this.stride = prefix.length + 20;
    this.keyScratch = Buffer.allocUnsafe(this.stride * keyCount);
    this.keyLens = new Int32Array(keyCount);
    this.keyHashes = new Uint32Array(keyCount);
    this.dataLens = new Int32Array(keyCount);
    this.inlineLine = template.inline
      ? Buffer.concat([...template.args.flatMap((parts, i) => [...(i > 0 ? [Buffer.from(' ')] : []), ...parts.map((p) => (p.kind === 'literal' ? p.bytes : Buffer.alloc(0)))]), Buffer.from('\r\n')])
      : null;
    this.keyArg = template.args.findIndex((parts) => parts.some((p) => p.kind === 'key' || p.kind === 'tag'));
    const keyArgBytes = this.keyArg < 0 ? 0 : template.args[this.keyArg].reduce((n, p) => n + (p.kind === 'literal' ? p.bytes.length : p.kind === 'key' || p.kind === 'tag' ? this.stride : 0), 0);
    this.slotScratch = Buffer.allocUnsafe(keyArgBytes);
    this.randDraws = template.inline ? 0 : template.args.reduce((n, parts) => n + parts.filter((p) => p.kind === 'randInt').length, 0);
    this.generations = new Uint32Array(keyCount).fill(values.generation);
    this.plain = PlainRequest.of(template.args, template.inline === true, keyCount, prefix, values);
  }

  /**
   * --cluster: the hash slot of the key argument of key `keyIndex` (the
   * argument holding __key__ or __tag__, its literal parts included),
   * written up to its first __data__ or __rand_int__: the CLI refuses those
   * in a key argument of a user's template under --cluster, and the command
   * suite's keys (`key:{__tag__}:__rand_int__`) hold them only after a whole
   * `{…}` hash tag, which alone then decides the slot. A template with no
   * key (PING) has no slot of its own: spreadSlot picks one from its key draw.
   */
  keySlot(keyIndex: number): number {
    if (this.keyArg < 0) return spreadSlot(keyIndex);
    const b = this.slotScratch;
    let pos = 0;
    const parts = this.template.args[this.keyArg];
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (p.kind === 'literal') pos += copyBytes(p.bytes, 0, p.bytes.length, b, pos);
      else if (p.kind === 'key') pos += writeKey(b, pos, this.prefix, keyIndex);
      else if (p.kind === 'tag') pos += writeDecimal(b, pos, keyIndex);
      else break;
    }
    return keySlot(b, 0, pos);
  }

  /** The argument holding __key__ or __tag__ as text (literal parts and a mark for each placeholder; null: no key): two encoders with the same one give every key the same slot. */
  keyArgSignature(): string | null {
    if (this.keyArg < 0) return null;
    return this.template.args[this.keyArg].map((p) => (p.kind === 'literal' ? `L${p.bytes.toString('hex')}` : p.kind)).join(' ');
  }

  /** Takes the `__rand_int__` draws of a request not sent here (--cluster), so the stream stays the same. */
  skipDraws(stream: KeyStream): void {
    for (let i = 0; i < this.randDraws; i++) stream.nextKeyIndex(this.keyspace);
  }

  /** Upper bound of the bytes one request takes. */
  maxBytes(): number {
    if (this.inlineLine) return this.inlineLine.length;
    let n = this.header.length;
    for (const arg of this.template.args) {
      n += 1 + 20 + 2 + 2;
      for (const p of arg) {
        if (p.kind === 'literal') n += p.bytes.length;
        else if (p.kind === 'key' || p.kind === 'tag') n += this.stride;
        else if (p.kind === 'data') n += this.values.sizes.max;
        else n += RAND_INT_DIGITS;
      }
    }
    return n;
  }

  /**
   * Writes the request for key `keyIndex` at `at`; returns its length.
   * `stream` supplies `__rand_int__` numbers, drawn in argument order.
   */
  encode(out: Buffer, at: number, keyIndex: number, stream: KeyStream): number {
    this.oneKey[0] = keyIndex;
    return this.encodeKeys(out, at, this.oneKey, stream);
  }

  /** As encode, for the keys `keys[0..keyCount)` (a multi-key template names each). */
  encodeKeys(out: Buffer, at: number, keys: Float64Array, stream: KeyStream): number {
    const plain = this.plain;
    if (plain !== null) {
      const len = plain.encode(out, at, keys[0], this.generations[0]);
      this.lastKeyHash = plain.keyHash;
      return len;
    }
    const scratch = this.keyScratch;
    const stride = this.stride;
    for (let k = 0; k < this.keyCount; k++) {
      const len = writeKey(scratch, k * stride, this.prefix, keys[k]);
      const h = fnv1a32(scratch, k * stride, len);
      this.keyLens[k] = len;
      this.keyHashes[k] = h;
      this.dataLens[k] = this.template.usesData ? this.values.sizeFor(h) : 0;
    }
    this.lastKeyHash = this.keyHashes[0];
    if (this.inlineLine) return copyBytes(this.inlineLine, 0, this.inlineLine.length, out, at);
    let pos = at + copyBytes(this.header, 0, this.header.length, out, at);
    const args = this.template.args;
    for (let a = 0; a < args.length; a++) {
      const parts = args[a];
      const slots = this.slots[a];
      let len = 0;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        if (p.kind === 'literal') len += p.bytes.length;
        else if (p.kind === 'key') len += this.keyLens[slots[i]];
        else if (p.kind === 'data') len += this.dataLens[slots[i]];
        else if (p.kind === 'tag') len += this.keyLens[0] - this.prefix.length;
        else len += RAND_INT_DIGITS;
      }
      out[pos++] = 36; // '$'
      pos += writeDecimal(out, pos, len);
      out[pos++] = 13;
      out[pos++] = 10;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        if (p.kind === 'literal') pos += copyBytes(p.bytes, 0, p.bytes.length, out, pos);
        else if (p.kind === 'key') {
          const k = slots[i];
          pos += copyBytes(scratch, k * stride, k * stride + this.keyLens[k], out, pos);
        } else if (p.kind === 'data') {
          const h = this.keyHashes[slots[i]];
          const g = this.generations[slots[i]];
          pos += this.values.writeValueOf(out, pos, h, g === 0 ? h : contentHash(h, g));
        } else if (p.kind === 'tag') pos += copyBytes(scratch, this.prefix.length, this.keyLens[0], out, pos);
        else pos += writePadded(out, pos, stream.nextKeyIndex(this.keyspace), RAND_INT_DIGITS);
      }
      out[pos++] = 13;
      out[pos++] = 10;
    }
    return pos - at;
  }
}

/**
 * Bare names a --command mix takes as writes (`NAME key value`); any other
 * bare name is `NAME key`. Paired with WRITE_NAMES in command.rs.
 */
const WRITE_NAMES = ['SET', 'SETNX', 'GETSET', 'APPEND'];
/** Reads whose reply is the key's value, so --verify-get checks it. Paired with VALUE_READS in command.rs. */
const VALUE_READS = ['GET', 'GETEX', 'GETDEL', 'MGET'];
/** Reads answered with an array of values, one per key (checked key by key). Paired with ARRAY_READS in command.rs. */
export const ARRAY_READS = ['MGET'];

/**
 * Commands that may delete their keys or give them an expiry: from when one
 * is sent, a nil read of its keys is a miss, never a lost write. Paired with
 * REMOVING_NAMES in command_kind.rs (docs/workload.md, "Replies").
 */
const REMOVING_NAMES = ['DEL', 'UNLINK', 'GETDEL', 'EXPIRE', 'PEXPIRE', 'EXPIREAT', 'PEXPIREAT', 'SETEX', 'PSETEX', 'RENAME', 'RENAMENX', 'MOVE', 'HDEL', 'RESTORE'];
/** Options that give a SET or GETEX an expiry (the key may be gone when read). */
const EXPIRY_OPTIONS = ['EX', 'PX', 'EXAT', 'PXAT'];

/** Whether a request of `template` may remove or expire the keys it names: see REMOVING_NAMES and EXPIRY_OPTIONS. */
export function removesKeys(template: Template): boolean {
  const name = templateName(template);
  if (REMOVING_NAMES.includes(name)) return true;
  return (name === 'SET' || name === 'GETEX') && EXPIRY_OPTIONS.some((o) => hasOption(template, o));
}

/** Whether an argument after the command name is the literal `option` (upper case given; any case matches): NX, EX, GET, … */
function hasOption(template: Template, option: string): boolean {
  return template.args.slice(1).some((parts) => parts.length === 1 && parts[0].kind === 'literal' && parts[0].bytes.toString('latin1').toUpperCase() === option);
}

/**
 * What a write's reply says when it left its key as it was (a conditional
 * write): then the key is not counted written (docs/workload.md, "Replies").
 * 'zero': `:0` (SETNX, MSETNX, HSETNX); 'nil': a nil (SET … NX, SET … XX,
 * SET … XX GET); 'value': SET … NX GET answers the value it found and did
 * not replace (nil: it wrote). Paired with Unwritten in command_kind.rs.
 */
export type Unwritten = 'never' | 'zero' | 'nil' | 'value';

/** Conditional writes named for it: `:0` when they wrote nothing. */
const NX_NAMES = ['SETNX', 'MSETNX', 'HSETNX'];
/** Commands that remove every key of the database: from when one is sent, no nil read is a lost write. */
const FLUSH_NAMES = ['FLUSHDB', 'FLUSHALL', 'SWAPDB'];

/** How a write of `template` may leave its key as it was: see Unwritten. */
export function unwrittenWhen(template: Template): Unwritten {
  const name = templateName(template);
  if (NX_NAMES.includes(name)) return 'zero';
  if (name !== 'SET') return 'never';
  const has = (option: string) => hasOption(template, option);
  const nx = has('NX');
  if (nx && has('GET')) return 'value';
  return nx || has('XX') ? 'nil' : 'never';
}

/** Whether a request of `template` removes every key (FLUSHDB, FLUSHALL, SWAPDB). */
export function removesEveryKey(template: Template): boolean {
  return FLUSH_NAMES.includes(templateName(template));
}

/** The template's command name, upper case (ASCII), from its first argument's bytes. */
export function templateName(template: Template): string {
  const first = template.args[0] ?? [];
  return first.map((p) => (p.kind === 'literal' ? p.bytes.toString('latin1') : '')).join('').toUpperCase();
}

/** Which role a bare name in a --command mix takes: see WRITE_NAMES. */
export function mixRole(source: string): 'set' | 'get' {
  const word = source.trim().split(/[ \t]+/)[0] ?? '';
  return WRITE_NAMES.includes(word.toUpperCase()) ? 'set' : 'get';
}

/**
 * How a mix command's replies count: `write` (sends __data__: acknowledged,
 * the key holds its value), `read` (GET and kin: the reply is the key's
 * value, checked by --verify-get), `other` (INCR, LPUSH, …: any reply but an
 * error is fine).
 */
export type CommandKind = 'write' | 'read' | 'other';

export function commandKind(template: Template): CommandKind {
  if (template.usesData) return 'write';
  if (!template.usesRandInt && VALUE_READS.includes(templateName(template))) return 'read';
  return 'other';
}
