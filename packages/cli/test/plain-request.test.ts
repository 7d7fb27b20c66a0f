import { describe, expect, it } from 'vitest';
import { CommandEncoder, parseTemplate } from '../src/engine-js/command.js';
import { KeyStream } from '../src/engine-js/keys.js';
import { ValueFactory } from '../src/engine-js/values.js';

/** The encoder with its plain path taken away: the general path's bytes. */
function general(e: CommandEncoder): CommandEncoder {
  (e as unknown as { plain: unknown }).plain = null;
  return e;
}

describe('a plain template (plain-request.ts) encodes the bytes of the general path', () => {
  const templates: [string, 'set' | 'get', boolean][] = [
    ['SET __key__ __data__', 'set', true],
    ['GET __key__', 'get', true],
    ['SET __key__ __data__ EX 100', 'set', true],
    ['HSET h __key__ __data__', 'set', true],
    ['GETEX __key__ PX 5', 'get', true],
    // A placeholder inside a word, a value before its key: the general path only.
    ['SET x:__key__ __data__', 'set', false],
    ['HSET __data__ __key__', 'set', false],
  ];
  for (const [source, role, plain] of templates) {
    it(`${source}: ${plain ? 'plain, same bytes' : 'not plain'}`, () => {
      for (const sizes of [{ min: 32, max: 32 }, { min: 1, max: 3000 }]) {
        for (const runGeneration of [0, 7]) {
          const values = new ValueFactory(sizes, runGeneration);
          const t = parseTemplate(source, role, false);
          const fast = new CommandEncoder(t, Buffer.from('bench:key:'), values, 1e9);
          expect((fast as unknown as { plain: unknown }).plain !== null).toBe(plain);
          const slow = general(new CommandEncoder(t, Buffer.from('bench:key:'), values, 1e9));
          const a = Buffer.alloc(fast.maxBytes());
          const b = Buffer.alloc(slow.maxBytes());
          const keys = new Float64Array(1);
          for (const key of [0, 9, 10, 12345, 999_999, 1_000_000, 2 ** 31 - 1, 2 ** 31, 2 ** 40 + 3]) {
            for (const generation of [runGeneration, 0, 5]) {
              keys[0] = key;
              fast.generations[0] = slow.generations[0] = generation;
              const la = fast.encodeKeys(a, 0, keys, new KeyStream(1, 0));
              const lb = slow.encodeKeys(b, 0, keys, new KeyStream(1, 0));
              expect(a.subarray(0, la).toString('latin1')).toBe(b.subarray(0, lb).toString('latin1'));
              expect(fast.lastKeyHash).toBe(slow.lastKeyHash);
            }
          }
        }
      }
    });
  }
  it('SET __key__ __data__ is what redis-benchmark sends', () => {
    const e = new CommandEncoder(parseTemplate('SET __key__ __data__', 'set', false), Buffer.from('k:'), new ValueFactory({ min: 3, max: 3 }), 100);
    const out = Buffer.alloc(e.maxBytes());
    const len = e.encodeKeys(out, 0, Float64Array.of(42), new KeyStream(1, 0));
    expect(out.subarray(0, len).toString('latin1')).toMatch(/^\*3\r\n\$3\r\nSET\r\n\$4\r\nk:42\r\n\$3\r\n[0-9a-f]{3}\r\n$/);
  });
});
