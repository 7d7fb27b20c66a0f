import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CommandEncoder, parseTemplate, type Part, TemplateError } from '../src/engine-js/command.js';
import { detExp2, detLog2, fmix32, fnv1a32, KeyChooser, KeyStream, RAND_INT_SALT, requestsForConnection } from '../src/engine-js/keys.js';
import { ValueFactory } from '../src/engine-js/values.js';
import { PreparedPlan } from '../src/engine-js/request-source.js';
import type { Plan } from '../src/engine-js/plan.js';
import { planOf } from './fixtures.js';

/** A connection's first `count` requests through the engine's own RequestSource: [command index, key index, bytes]. */
function requestsOf(plan: Plan, connection: number, count: number): [number, number, string][] {
  const prepared = new PreparedPlan(plan);
  const source = prepared.runSource(connection, true);
  const out = Buffer.alloc(prepared.maxRequestBytes);
  return Array.from({ length: count }, () => {
    const r = source.next(out, 0);
    return [r.command, r.keyIndex, out.toString('latin1', 0, r.len)];
  });
}

const vectors = JSON.parse(readFileSync(new URL('../../../test/vectors/workload.json', import.meta.url), 'utf8'));

describe('shared workload vectors (docs/workload.md)', () => {
  it('fmix32 and fnv1a32 match', () => {
    for (const [x, y] of vectors.fmix32) expect(fmix32(x)).toBe(y);
    for (const [s, h] of vectors.fnv1a32) expect(fnv1a32(Buffer.from(s), 0, Buffer.byteLength(s))).toBe(h);
  });

  it('same seed and connection give the same PRNG outputs', () => {
    for (const v of vectors.streams) {
      const a = new KeyStream(v.seed, v.connection);
      expect(v.u32.map(() => a.nextU32())).toEqual(v.u32);
      const b = new KeyStream(v.seed, v.connection);
      expect(v.u53.map(() => b.nextU53())).toEqual(v.u53);
    }
  });

  it('draws the same operations and key indexes', () => {
    for (const v of vectors.draws) {
      const s = new KeyStream(v.seed, v.connection);
      const ops = v.ops.map(() => {
        const isSet = v.mode === 'mixed' ? s.nextIsSet(v.setRatio) : v.mode === 'set';
        return [isSet ? 'set' : 'get', s.nextKeyIndex(v.keyspace)];
      });
      expect(ops).toEqual(v.ops);
    }
  });

  it('--mode draws the same operations and key indexes through the request source (a two-command mix)', () => {
    for (const v of vectors.draws) {
      const plan = { ...planOf(), seed: v.seed, connections: v.connection + 1, mode: v.mode, setRatio: v.setRatio, keyspace: v.keyspace };
      const got = requestsOf(plan, v.connection, v.ops.length).map(([command, key]) => [command === 0 ? 'set' : 'get', key]);
      expect(got).toEqual(v.ops);
    }
  });

  it('a weighted command mix draws the same commands and sends the same bytes', () => {
    for (const v of vectors.mixes) {
      const plan: Plan = {
        ...planOf(),
        seed: v.seed,
        connections: v.connections,
        keyspace: v.keyspace,
        keyPattern: v.keyPattern,
        keyPrefix: v.keyPrefix,
        valueSizeMin: v.valueSize,
        valueSizeMax: v.valueSize,
        commands: v.commands,
      };
      const got = requestsOf(plan, v.connection, v.requests.length).map(([command, , bytes]) => [command, bytes]);
      expect(got).toEqual(v.requests);
    }
  });

  it('derives the same value from a key and size', () => {
    for (const v of vectors.values) {
      expect(new ValueFactory({ min: v.min, max: v.max }, v.generation ?? 0).valueForKey(Buffer.from(v.key)).toString('latin1')).toBe(v.value);
    }
  });

  it('splits requests across connections the same way', () => {
    for (const [total, conns, shares] of vectors.split) {
      expect(shares.map((_: number, c: number) => requestsForConnection(total, conns, c))).toEqual(shares);
    }
  });

  it('encodes the same command bytes, and routes a --cluster request by the same slot', () => {
    for (const v of vectors.commands) {
      const sizes = { min: v.valueSize, max: v.valueSize };
      const enc = new CommandEncoder(parseTemplate(v.template, v.role, v.literal ?? false), Buffer.from(v.keyPrefix), new ValueFactory(sizes), v.keyspace ?? 100000);
      const out = Buffer.alloc(enc.maxBytes());
      const n = enc.encode(out, 0, v.keyIndex, new KeyStream(((v.seed ?? 0) ^ RAND_INT_SALT) >>> 0, v.connection ?? 0));
      expect(out.subarray(0, n).toString('latin1'), v.template).toBe(v.bytes);
      if (v.slot !== undefined) expect(enc.keySlot(v.keyIndex), v.template).toBe(v.slot);
    }
  });
});

/** A part as the vectors write it: "key", "data", "randInt", "tag" or {hex} for literal bytes. */
function partJson(p: Part): unknown {
  return p.kind === 'literal' ? { hex: p.bytes.toString('hex') } : p.kind;
}

describe('template grammar (docs/workload.md, "Template grammar")', () => {
  it('splits, unquotes and refuses templates as the reference does', () => {
    expect(vectors.templates.length).toBeGreaterThan(40);
    for (const v of vectors.templates) {
      let got: unknown;
      try {
        got = { args: parseTemplate(v.template, v.role, v.literal).args.map((a) => a.map(partJson)) };
      } catch (err) {
        if (!(err instanceof TemplateError)) throw err;
        got = { error: err.message };
      }
      expect(got, JSON.stringify(v.template)).toEqual(v.error === undefined ? { args: v.args } : { error: v.error });
    }
  });

  it('refuses text with a lone surrogate, which has no UTF-8 bytes to send', () => {
    expect(() => parseTemplate('SET __key__ "\ud800"', 'set')).toThrow(/lone surrogate/);
    expect(parseTemplate('SET __key__ "\ud83d\ude00"', 'set').args[2]).toEqual([{ kind: 'literal', bytes: Buffer.from('\u{1F600}') }]);
  });

  it('a long quoted argument parses (no per-byte recursion or spread limits)', () => {
    const big = 'x'.repeat(1 << 20);
    const arg = parseTemplate(`SET __key__ "${big}"`, 'set').args[2];
    expect(arg.length).toBe(1);
    expect(arg[0].kind === 'literal' && arg[0].bytes.equals(Buffer.from(big))).toBe(true);
  });
});

describe('key patterns (docs/workload.md)', () => {
  it('the deterministic log2/exp2 match the reference to the bit', () => {
    for (const [a, y] of vectors.math.log2) expect(detLog2(a)).toBe(y);
    for (const [a, y] of vectors.math.exp2) expect(detExp2(a)).toBe(y);
  });

  it('each pattern draws the same indexes', () => {
    for (const v of vectors.keyPatterns) {
      const chooser = new KeyChooser({ keyPattern: v.pattern, keyStddev: v.keyStddev, zipfExponent: v.zipfExponent }, v.keyspace, v.connection, v.connections);
      const stream = new KeyStream(v.seed, v.connection);
      expect(v.indexes.map(() => chooser.next(stream)), v.pattern).toEqual(v.indexes);
    }
  });
});

describe('shared hash-slot vectors (test/vectors/slots.json)', () => {
  const slots = JSON.parse(readFileSync(new URL('../../../test/vectors/slots.json', import.meta.url), 'utf8'));
  it('crc16 and key slots match, {hashtag} rules and UTF-8 keys included', async () => {
    const { crc16, keySlot } = await import('../src/engine-js/slot.js');
    for (const [s, crc] of slots.crc16) expect(crc16(Buffer.from(s), 0, Buffer.byteLength(s))).toBe(crc);
    expect(slots.slots.length).toBeGreaterThan(30);
    for (const [key, slot] of slots.slots) {
      const b = Buffer.concat([Buffer.from('xx'), Buffer.from(key)]);
      expect([key, keySlot(b, 2, b.length - 2)]).toEqual([key, slot]);
    }
  });
});
