/**
 * Request templates and their RESP encoding. `--set-cmd`/`--get-cmd` take a
 * bare command name (`--set-cmd HSET` means `HSET __key__ __data__`,
 * `--get-cmd HGET` means `HGET __key__`) or a template whose arguments hold the
 * placeholders `__key__`, `__data__` (from memtier) and `__rand_int__` (from
 * redis-benchmark); for the command suite's own commands (-t,
 * Plan.literalCommands) a single word is sent as it is. A template is parsed once into parts; per request an encoder
 * writes the whole RESP array (header, length headers, literal parts, key,
 * value, random numbers) into the caller's preallocated buffer. Paired with
 * crates/respbench-core/src/command.rs.
 */
import { copyBytes, fnv1a32, KeyStream, writeDecimal, writeKey, writePadded } from './keys.js';
import type { ValueFactory } from './values.js';

export const PLACEHOLDERS = ['__key__', '__data__', '__rand_int__'] as const;
const RAND_INT_DIGITS = 12;

/** One piece of an argument: fixed bytes, or a placeholder filled per request. */
export type Part =
  | { kind: 'literal'; bytes: Buffer }
  | { kind: 'key' }
  | { kind: 'data' }
  | { kind: 'randInt' };

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

/**
 * Parses `--set-cmd` / `--get-cmd`. Arguments are separated by spaces; a
 * single bare word is the kvstore shape (`NAME key value` or `NAME key`).
 * `literal` (the command suite's own commands, Plan.literalCommands) sends a
 * single word as it is and needs no __key__.
 */
export function parseTemplate(source: string, role: 'set' | 'get', literal = false): Template {
  const words = source.trim().split(/\s+/).filter((w) => w.length > 0);
  if (words.length === 0) throw new TemplateError('is empty');
  if (!literal && words.length === 1 && !words[0].includes('__')) {
    words.push('__key__');
    if (role === 'set') words.push('__data__');
  }
  const args: Part[][] = [];
  let usesKey = false;
  let usesData = false;
  let usesRandInt = false;
  for (const word of words) {
    const parts: Part[] = [];
    const re = /__[A-Za-z_]*?__/g;
    let last = 0;
    for (let m = re.exec(word); m; m = re.exec(word)) {
      if (m.index > last) parts.push({ kind: 'literal', bytes: Buffer.from(word.slice(last, m.index)) });
      switch (m[0]) {
        case '__key__':
          parts.push({ kind: 'key' });
          usesKey = true;
          break;
        case '__data__':
          parts.push({ kind: 'data' });
          usesData = true;
          break;
        case '__rand_int__':
          parts.push({ kind: 'randInt' });
          usesRandInt = true;
          break;
        default:
          throw new TemplateError(`has unknown placeholder ${m[0]} (known: ${PLACEHOLDERS.join(', ')})`);
      }
      last = m.index + m[0].length;
    }
    if (last < word.length) parts.push({ kind: 'literal', bytes: Buffer.from(word.slice(last)) });
    args.push(parts);
  }
  if (args[0].some((p) => p.kind !== 'literal')) throw new TemplateError('must start with a command name, not a placeholder');
  if (!literal && !usesKey) throw new TemplateError('has no __key__ placeholder');
  return { source, args, usesKey, usesData, usesRandInt };
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
 * Encodes one template per request into a caller's buffer. Keeps a scratch
 * buffer for the key so that its hash (and so the value) is known before the
 * length headers are written.
 */
export class CommandEncoder {
  private readonly header: Buffer;
  private readonly keyScratch: Buffer;
  /** The whole request of an inline template (its words, one space apart, and CRLF). */
  private readonly inlineLine: Buffer | null;
  /** Hash of the key of the last encoded request (what verification needs). */
  lastKeyHash = 0;

  constructor(
    private readonly template: Template,
    private readonly prefix: Buffer,
    private readonly values: ValueFactory,
    private readonly keyspace: number,
  ) {
    this.header = Buffer.from(`*${template.args.length}\r\n`);
    this.keyScratch = Buffer.allocUnsafe(prefix.length + 20);
    this.inlineLine = template.inline
      ? Buffer.concat([...template.args.flatMap((parts, i) => [...(i > 0 ? [Buffer.from(' ')] : []), ...parts.map((p) => (p.kind === 'literal' ? p.bytes : Buffer.alloc(0)))]), Buffer.from('\r\n')])
      : null;
  }

  /** Upper bound of the bytes one request takes. */
  maxBytes(): number {
    if (this.inlineLine) return this.inlineLine.length;
    let n = this.header.length;
    for (const arg of this.template.args) {
      n += 1 + 20 + 2 + 2;
      for (const p of arg) {
        if (p.kind === 'literal') n += p.bytes.length;
        else if (p.kind === 'key') n += this.keyScratch.length;
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
    const keyLen = writeKey(this.keyScratch, 0, this.prefix, keyIndex);
    const h = fnv1a32(this.keyScratch, 0, keyLen);
    this.lastKeyHash = h;
    if (this.inlineLine) return copyBytes(this.inlineLine, 0, this.inlineLine.length, out, at);
    const dataLen = this.template.usesData ? this.values.sizeFor(h) : 0;
    let pos = at + copyBytes(this.header, 0, this.header.length, out, at);
    const args = this.template.args;
    for (let a = 0; a < args.length; a++) {
      const parts = args[a];
      let len = 0;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        if (p.kind === 'literal') len += p.bytes.length;
        else if (p.kind === 'key') len += keyLen;
        else if (p.kind === 'data') len += dataLen;
        else len += RAND_INT_DIGITS;
      }
      out[pos++] = 36; // '$'
      pos += writeDecimal(out, pos, len);
      out[pos++] = 13;
      out[pos++] = 10;
      for (let i = 0; i < parts.length; i++) {
        const p = parts[i];
        if (p.kind === 'literal') pos += copyBytes(p.bytes, 0, p.bytes.length, out, pos);
        else if (p.kind === 'key') pos += copyBytes(this.keyScratch, 0, keyLen, out, pos);
        else if (p.kind === 'data') pos += this.values.writeValue(out, pos, h);
        else pos += writePadded(out, pos, stream.nextKeyIndex(this.keyspace), RAND_INT_DIGITS);
      }
      out[pos++] = 13;
      out[pos++] = 10;
    }
    return pos - at;
  }
}
