/**
 * --cluster: a connection's per-primary request sources, together, send
 * exactly the requests of its single-server stream. A skipped request
 * (another primary's) takes the same draws as a sent one: the command draw
 * of a mix, its keys, its __rand_int__s. As crates/respbench-core/tests/cluster_split.rs.
 */
import { describe, expect, it } from 'vitest';
import type { Plan } from '../src/engine-js/plan.js';
import { PreparedPlan, SEND_ALL, SEND_READS, SEND_WRITES, type Side } from '../src/engine-js/request-source.js';
import { keySlot } from '../src/engine-js/slot.js';
import { planForTest, SUITE, withBenchmarkDefaults } from '../src/suite.js';
import { planOf } from './fixtures.js';

/** The requests' bytes of a source, each as latin1 text. */
function requests(prepared: PreparedPlan, node: number, side: Side = SEND_ALL): string[] {
  const source = prepared.runSource(1, false, node, side);
  const out = Buffer.alloc(prepared.maxRequestBytes);
  const all: string[] = [];
  while (source.remaining > 0) {
    const r = source.next(out, 0);
    if (r.len === 0) break;
    all.push(out.toString('latin1', 0, r.len));
  }
  return all;
}

/** The second argument of a RESP array request (the key argument of every command here). */
function secondArg(r: string): string {
  return r.split('\r\n')[4];
}

describe('--cluster request sources', () => {
  it.each(['bench:key:', '{t}:'])('prefix %s: the node sources together send the single-server stream, each request once', (prefix) => {
    const plan: Plan = {
      ...planOf(['-n', '3000', '-c', '2', '-r', '500', '--seed', '9', '--key-prefix', prefix]),
      commands: [
        { template: 'GET __key__', weight: 60, keyPattern: null },
        { template: 'SET __key__ __data__ __rand_int__', weight: 20, keyPattern: null },
        { template: 'INCRBY n:__key__ __rand_int__', weight: 10, keyPattern: 'zipf' },
        { template: 'MGET __key__ __key__', weight: 10, keyPattern: null },
      ],
    };
    const single = requests(new PreparedPlan(plan), -1);
    expect(single).toHaveLength(1500);
    const cluster = {
      seeds: [],
      nodes: [{ host: 'a', port: 1 }, { host: 'b', port: 2 }, { host: 'c', port: 3 }],
      slots: [[0, 5460, 0], [5461, 10922, 1], [10923, 16383, 2]] as [number, number, number][],
    };
    const prepared = new PreparedPlan({ ...plan, cluster });
    const split = [0, 1, 2].flatMap((n) => requests(prepared, n));
    expect(split.sort()).toEqual([...single].sort());
    // Each request went to the owner of its key argument's slot, hashed here from the bytes sent: the
    // memo of slots per key index is per key argument (GET's `k` and INCRBY's `n:k` differ).
    for (const n of [0, 1, 2]) {
      for (const r of requests(prepared, n)) {
        const key = Buffer.from(secondArg(r), 'latin1');
        expect([5460, 10922, 16383].findIndex((last) => keySlot(key, 0, key.length) <= last), r).toBe(n);
      }
    }
    // --rate: each request a node's source yields knows its number in the connection's stream
    // (walked - 1), so it is due when it would be on one server: put at those numbers, the
    // nodes' requests are the single-server stream in order. As cluster_split.rs.
    const byOrdinal: string[] = [];
    for (const n of [0, 1, 2]) {
      const source = prepared.runSource(1, false, n, SEND_ALL);
      const out = Buffer.alloc(prepared.maxRequestBytes);
      for (let r = source.next(out, 0); r.len > 0; r = source.next(out, 0)) {
        expect(byOrdinal[source.walked - 1]).toBeUndefined();
        byOrdinal[source.walked - 1] = out.toString('latin1', 0, r.len);
      }
    }
    expect(byOrdinal).toEqual(single);
    // --read-from: a node's writes and reads sources (two sockets) split its share, each request once;
    // the reads are the GET-like commands (GET, MGET), the writes the rest. As cluster_split.rs.
    for (const n of [0, 1, 2]) {
      const all = requests(prepared, n);
      const writes = requests(prepared, n, SEND_WRITES);
      const reads = requests(prepared, n, SEND_READS);
      expect(writes.length > 0 && reads.length > 0).toBe(all.length > 0);
      expect(reads.every((r) => r.startsWith('*2\r\n$3\r\nGET') || r.startsWith('*3\r\n$4\r\nMGET'))).toBe(true);
      expect(writes.some((r) => r.startsWith('*2\r\n$3\r\nGET') || r.startsWith('*3\r\n$4\r\nMGET'))).toBe(false);
      expect([...writes, ...reads].sort()).toEqual([...all].sort());
    }
  });

  it.each([['-r 500', ['-r', '500']], ['no -r', []]])('the command suite (%s): each test\'s requests split over the primaries, each once, every key of a request in its node\'s slots', (_what, keyspace) => {
    const cluster = {
      seeds: [],
      nodes: [{ host: 'a', port: 1 }, { host: 'b', port: 2 }, { host: 'c', port: 3 }],
      slots: [[0, 5460, 0], [5461, 10922, 1], [10923, 16383, 2]] as [number, number, number][],
    };
    const base = withBenchmarkDefaults({ ...planOf(['-n', '600', '-c', '2', '--seed', '4', ...keyspace]), cluster }, (f) => f === 'requests' || f === 'connections' || (f === 'keyspace' && keyspace.length > 0));
    for (const test of SUITE) {
      const plan = planForTest(base, test);
      const single = requests(new PreparedPlan({ ...plan, cluster: null }), -1);
      expect(single, test.name).toHaveLength(300);
      const prepared = new PreparedPlan(plan);
      const shares = [0, 1, 2].map((n) => requests(prepared, n));
      expect(shares.flat().sort(), test.name).toEqual([...single].sort());
      // Not one node's load: each primary gets a share (PING by its key draw, the rest by their tags).
      expect(shares.every((share) => share.length > 50), `${test.name}: ${shares.map((x) => x.length)}`).toBe(true);
      shares.forEach((share, n) => {
        for (const r of share) {
          // Every argument that names a key (holds a tag) hashes into node n's slots: MSET's ten too.
          for (const arg of r.split('\r\n').filter((a) => a.includes(':{'))) {
            const key = Buffer.from(arg, 'latin1');
            expect([5460, 10922, 16383].findIndex((last) => keySlot(key, 0, key.length) <= last), r).toBe(n);
          }
        }
      });
    }
  });
});
