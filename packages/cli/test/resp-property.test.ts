/**
 * Properties of the reply scanner and of ReplyReader, the carry buffer the
 * JS engine reads through: however a stream of valid RESP2/RESP3 replies is
 * cut into reads, it scans into the same replies as when whole; a prefix of
 * a valid reply is "need more", never an error; and no bytes whatsoever make
 * it throw anything but ProtocolError.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ProtocolError, ReplyKind, ReplyReader, ReplyScanner } from '../src/engine-js/reply.js';

/** A reply as the engine sees it: its kind and what it carries. */
interface Seen {
  kind: ReplyKind;
  /** Payload bytes (hex) for simple, error, integer and bulk replies; element count for aggregates. */
  payload: string | number | null;
}

interface Encoded {
  bytes: Buffer;
  /** How the top-level reply scans, as the engine reads it. */
  seen: Seen;
}

const enc = (s: string | Buffer): Buffer => (typeof s === 'string' ? Buffer.from(s, 'latin1') : s);
const concat = (parts: Array<string | Buffer>): Buffer => Buffer.concat(parts.map(enc));

/** Text for simple strings and errors: any byte but CR and LF. */
const lineText = fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a.filter((b) => b !== 13 && b !== 10)));
/** Bulk payloads: any bytes, CRLF included. */
const blob = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
  fc.constantFrom(Buffer.from('\r\n'), Buffer.from('$3\r\nabc\r\n'), Buffer.from('\r'), Buffer.from('')),
);

function leaf(): fc.Arbitrary<Encoded> {
  return fc.oneof(
    lineText.map((t) => ({ bytes: concat(['+', t, '\r\n']), seen: { kind: ReplyKind.Simple, payload: t.toString('hex') } })),
    lineText.map((t) => ({ bytes: concat(['-', t, '\r\n']), seen: { kind: ReplyKind.Error, payload: t.toString('hex') } })),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => ({
      bytes: enc(`:${n}\r\n`),
      seen: { kind: ReplyKind.Integer, payload: Buffer.from(String(n)).toString('hex') },
    })),
    blob.map((b) => ({ bytes: concat([`$${b.length}\r\n`, b, '\r\n']), seen: { kind: ReplyKind.Bulk, payload: b.toString('hex') } })),
    blob.map((b) => ({ bytes: concat([`!${b.length}\r\n`, b, '\r\n']), seen: { kind: ReplyKind.Error, payload: b.toString('hex') } })),
    blob.map((b) => {
      const v = concat(['txt:', b]);
      return { bytes: concat([`=${v.length}\r\n`, v, '\r\n']), seen: { kind: ReplyKind.Verbatim, payload: b.toString('hex') } };
    }),
    fc.constantFrom(
      { bytes: enc('$-1\r\n'), seen: { kind: ReplyKind.Nil, payload: null } },
      { bytes: enc('*-1\r\n'), seen: { kind: ReplyKind.Nil, payload: null } },
      { bytes: enc('_\r\n'), seen: { kind: ReplyKind.Nil, payload: null } },
      { bytes: enc('#t\r\n'), seen: { kind: ReplyKind.Other, payload: null } },
      { bytes: enc(',-1.5e10\r\n'), seen: { kind: ReplyKind.Other, payload: null } },
      { bytes: enc(',inf\r\n'), seen: { kind: ReplyKind.Other, payload: null } },
      { bytes: enc('(3492890328409238509324850943850943825024385\r\n'), seen: { kind: ReplyKind.Other, payload: null } },
    ),
  );
}

/** Any reply, aggregates (RESP3 attributes included) nested up to a few levels. */
const reply: fc.Arbitrary<Encoded> = fc.letrec<{ reply: Encoded }>((tie) => ({
  reply: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf(),
    fc
      .tuple(fc.constantFrom('*', '~', '>'), fc.array(tie('reply'), { maxLength: 4 }))
      .map(([t, items]) => ({
        bytes: concat([`${t}${items.length}\r\n`, ...items.map((i) => i.bytes)]),
        seen: { kind: t === '>' ? ReplyKind.Push : ReplyKind.Aggregate, payload: items.length },
      })),
    fc
      .array(fc.tuple(tie('reply'), tie('reply')), { maxLength: 3 })
      .map((pairs) => ({ bytes: concat([`%${pairs.length}\r\n`, ...pairs.flatMap(([k, v]) => [k.bytes, v.bytes])]), seen: { kind: ReplyKind.Aggregate, payload: pairs.length } })),
    // An attribute annotates the reply after it, which is what the engine must see.
    fc
      .tuple(fc.array(fc.tuple(tie('reply'), tie('reply')), { minLength: 1, maxLength: 2 }), tie('reply'))
      .map(([pairs, value]) => ({ bytes: concat([`|${pairs.length}\r\n`, ...pairs.flatMap(([k, v]) => [k.bytes, v.bytes]), value.bytes]), seen: value.seen })),
  ),
})).reply;

/** What the engine keeps of a reply, copied out before the buffer moves on. */
function observe(buf: Buffer, s: ReplyScanner): Seen {
  switch (s.kind) {
    case ReplyKind.Simple:
    case ReplyKind.Error:
    case ReplyKind.Integer:
    case ReplyKind.Bulk:
    case ReplyKind.Verbatim:
      return { kind: s.kind, payload: buf.toString('hex', s.payloadStart, s.payloadStart + s.payloadLen) };
    case ReplyKind.Aggregate:
    case ReplyKind.Push:
      return { kind: s.kind, payload: s.payloadLen };
    default:
      return { kind: s.kind, payload: null };
  }
}

/** Feeds chunks through a ReplyReader the way engine-js does; returns the replies seen and the bytes left over. */
function feed(chunks: Buffer[]): { seen: Seen[]; left: number } {
  const reader = new ReplyReader(16);
  const seen: Seen[] = [];
  for (const chunk of chunks) {
    reader.push(chunk);
    while (reader.pending() && reader.next()) seen.push(observe(reader.buf, reader.scanner));
    reader.keepRest();
  }
  return { seen, left: reader.partialLength };
}

/** Cuts `bytes` at the given offsets (any order, duplicates and out-of-range ones ignored). */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.filter((o) => o > 0 && o < bytes.length))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const p of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, p));
    from = p;
  }
  return chunks;
}

describe('ReplyReader over any split of valid replies', () => {
  it('scans the same replies as the unsplit stream, and as each reply was encoded', () => {
    fc.assert(
      fc.property(fc.array(reply, { minLength: 1, maxLength: 8 }), fc.array(fc.nat({ max: 4096 }), { maxLength: 30 }), (replies, offsets) => {
        const stream = Buffer.concat(replies.map((r) => r.bytes));
        const whole = feed([stream]);
        expect(whole).toEqual({ seen: replies.map((r) => r.seen), left: 0 });
        expect(feed(cut(stream, offsets.map((o) => o % (stream.length + 1))))).toEqual(whole);
      }),
      { numRuns: 1500 },
    );
  });

  it('a proper prefix of any reply is "need more" (-1), never an error', () => {
    fc.assert(
      fc.property(reply, fc.nat(), (r, at) => {
        const end = at % r.bytes.length;
        expect(new ReplyScanner().scan(r.bytes, 0, end)).toBe(-1);
        expect(new ReplyScanner().scan(r.bytes, 0, r.bytes.length)).toBe(r.bytes.length);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('the scanner on arbitrary bytes', () => {
  function onlyProtocolErrors(chunks: Buffer[]): void {
    try {
      feed(chunks);
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      expect(err.message).not.toMatch(/[\r\n]/);
      expect(err.offset).toBeGreaterThanOrEqual(0);
    }
  }

  it('random bytes, split anywhere, throw nothing but ProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.array(fc.nat({ max: 200 }), { maxLength: 10 }), (bytes, offsets) => {
        onlyProtocolErrors(cut(Buffer.from(bytes), offsets));
      }),
      { numRuns: 3000 },
    );
  });

  it('RESP-looking bytes (type bytes, digits, CR, LF) throw nothing but ProtocolError', () => {
    const respish = fc.array(fc.constantFrom(...Buffer.from('+-:$*%~>|_,#(!=?-0123456789\r\n\r\nx')), { maxLength: 120 });
    fc.assert(
      fc.property(respish, fc.array(fc.nat({ max: 120 }), { maxLength: 6 }), (bytes, offsets) => {
        onlyProtocolErrors(cut(Buffer.from(bytes), offsets));
      }),
      { numRuns: 3000 },
    );
  });

  it('a valid stream with one byte changed, split anywhere, throws nothing but ProtocolError', () => {
    fc.assert(
      fc.property(fc.array(reply, { minLength: 1, maxLength: 5 }), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.array(fc.nat(), { maxLength: 6 }), (replies, at, byte, offsets) => {
        const stream = Buffer.concat(replies.map((r) => r.bytes));
        stream[at % stream.length] = byte;
        onlyProtocolErrors(cut(stream, offsets.map((o) => o % (stream.length + 1))));
      }),
      { numRuns: 2000 },
    );
  });
});

/** Replies of every kind, nested, for the exhaustive tests. */
const SAMPLES: Array<[string, Seen]> = [
  ['+OK\r\n', { kind: ReplyKind.Simple, payload: Buffer.from('OK').toString('hex') }],
  ['-ERR wrong number of arguments\r\n', { kind: ReplyKind.Error, payload: Buffer.from('ERR wrong number of arguments').toString('hex') }],
  [':-9223372036854775808\r\n', { kind: ReplyKind.Integer, payload: Buffer.from('-9223372036854775808').toString('hex') }],
  ['$12\r\nhello\r\nworld\r\n', { kind: ReplyKind.Bulk, payload: Buffer.from('hello\r\nworld').toString('hex') }],
  ['$0\r\n\r\n', { kind: ReplyKind.Bulk, payload: '' }],
  ['$-1\r\n', { kind: ReplyKind.Nil, payload: null }],
  ['*-1\r\n', { kind: ReplyKind.Nil, payload: null }],
  ['_\r\n', { kind: ReplyKind.Nil, payload: null }],
  ['*3\r\n:1\r\n$3\r\nabc\r\n*2\r\n+a\r\n-b\r\n', { kind: ReplyKind.Aggregate, payload: 3 }],
  ['%2\r\n+k1\r\n$2\r\nv1\r\n+k2\r\n~1\r\n#f\r\n', { kind: ReplyKind.Aggregate, payload: 2 }],
  ['|1\r\n+ttl\r\n:3600\r\n$5\r\nvalue\r\n', { kind: ReplyKind.Bulk, payload: Buffer.from('value').toString('hex') }],
  ['|1\r\n*1\r\n+x\r\n%0\r\n-ERR after attribute\r\n', { kind: ReplyKind.Error, payload: Buffer.from('ERR after attribute').toString('hex') }],
  ['=15\r\ntxt:Some string\r\n', { kind: ReplyKind.Verbatim, payload: Buffer.from('Some string').toString('hex') }],
  ['!21\r\nSYNTAX invalid syntax\r\n', { kind: ReplyKind.Error, payload: Buffer.from('SYNTAX invalid syntax').toString('hex') }],
  ['>2\r\n+message\r\n$3\r\nhi!\r\n', { kind: ReplyKind.Push, payload: 2 }],
  [',3.14\r\n', { kind: ReplyKind.Other, payload: null }],
  ['(12345678901234567890123\r\n', { kind: ReplyKind.Other, payload: null }],
];

describe('exhaustive splits of every kind of reply', () => {
  const stream = Buffer.concat(SAMPLES.map(([s]) => Buffer.from(s, 'latin1')));
  const expected = { seen: SAMPLES.map(([, seen]) => seen), left: 0 };

  it('the samples scan as listed when whole', () => {
    expect(feed([stream])).toEqual(expected);
  });

  it('one cut at every offset of the whole stream', () => {
    for (let at = 0; at <= stream.length; at++) {
      expect([at, feed(cut(stream, [at]))]).toEqual([at, expected]);
    }
  });

  it('two cuts at every pair of offsets within each reply', () => {
    for (const [text, seen] of SAMPLES) {
      const bytes = Buffer.from(text, 'latin1');
      for (let a = 0; a <= bytes.length; a++) {
        for (let b = a; b <= bytes.length; b++) {
          expect([text, a, b, feed(cut(bytes, [a, b]))]).toEqual([text, a, b, { seen: [seen], left: 0 }]);
        }
      }
    }
  });

  it('byte by byte', () => {
    expect(feed(cut(stream, Array.from({ length: stream.length }, (_, i) => i)))).toEqual(expected);
  });

  it('every proper prefix of each reply is "need more", and the bytes wait in the carry buffer', () => {
    for (const [text] of SAMPLES) {
      const bytes = Buffer.from(text, 'latin1');
      for (let end = 0; end < bytes.length; end++) {
        expect([text, end, new ReplyScanner().scan(bytes, 0, end)]).toEqual([text, end, -1]);
        expect([text, end, feed([bytes.subarray(0, end)])]).toEqual([text, end, { seen: [], left: end }]);
      }
    }
  });
});

describe('a reply spanning many reads is scanned once (resume)', () => {
  /** Counts how many bytes the scanner's line search visits: resuming keeps it near the stream length. */
  it('a large array fed in small reads scans the same as whole, and each read resumes where the last stopped', () => {
    const elements = 20_000;
    const parts: string[] = [`*${elements}\r\n`];
    for (let i = 0; i < elements; i++) parts.push(i % 3 === 0 ? `$${String(i).length}\r\n${i}\r\n` : i % 3 === 1 ? `:${i}\r\n` : `*1\r\n+x${i}\r\n`);
    const stream = Buffer.concat([Buffer.from(parts.join(''), 'latin1'), Buffer.from('+after\r\n')]);
    const chunks = cut(stream, Array.from({ length: Math.ceil(stream.length / 100) }, (_, i) => i * 100));
    const expected = [{ kind: ReplyKind.Aggregate, payload: elements }, { kind: ReplyKind.Simple, payload: Buffer.from('after').toString('hex') }];
    expect(feed(chunks)).toEqual({ seen: expected, left: 0 });
    // Restarting from the array's first byte on each of ~1,700 reads would
    // visit ~1,700 × (half the array) header bytes; resuming visits each once.
    const reader = new ReplyReader(16);
    const scanner = reader.scanner as unknown as { findLine(buf: Uint8Array, from: number, end: number): boolean };
    const original = scanner.findLine.bind(reader.scanner);
    let calls = 0;
    scanner.findLine = (buf, from, end) => {
      calls++;
      return original(buf, from, end);
    };
    for (const chunk of chunks) {
      reader.push(chunk);
      while (reader.pending() && reader.next());
      reader.keepRest();
    }
    // One header line per element (two for the nested ones), plus one retry per read.
    expect(calls).toBeLessThan(elements * 2 + chunks.length * 2);
  });

  it('resume after a fresh scan of another reply at the same offset starts over', () => {
    const s = new ReplyScanner();
    const a = Buffer.from('*2\r\n+a\r\n', 'latin1');
    expect(s.scan(a, 0, a.length)).toBe(-1);
    const b = Buffer.from('+b\r\n', 'latin1');
    expect(s.scan(b, 0, b.length)).toBe(b.length);
    expect(s.resume(b, 0, b.length)).toBe(b.length);
    expect(s.kind).toBe(ReplyKind.Simple);
  });
});

describe('malformed replies are ProtocolErrors that show the bytes escaped', () => {
  const bad: Array<[string, RegExp]> = [
    ['?what\r\n', /^unknown reply type byte at byte 0: "\?what\\r\\n"$/],
    ['$abc\r\nxyz\r\n', /^bad bulk length at byte 0: "\$abc\\r\\n"$/],
    ['$-2\r\n', /^bad bulk length -2/],
    ['*x\r\n', /^bad aggregate length at byte 0/],
    [':12a\r\n', /^bad integer at byte 0/],
    ['$3\r\nabcd\r\n', /^bulk string not followed by CRLF at byte 7: "d\\r\\n"$/],
    ['+OK\rX', /^CR not followed by LF/],
    ['+OK\n', /^LF without CR/],
    ['+OK\r\n\x00\xffjunk', /^unknown reply type byte at byte 5: "\\x00\\xffjunk"$/],
  ];
  it.each(bad)('%j', (text, message) => {
    const bytes = Buffer.from(text, 'latin1');
    let caught: unknown = null;
    try {
      feed([bytes]);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ProtocolError);
    expect((caught as ProtocolError).message).toMatch(message);
  });
});
