/** The -t suite's pure parts: parsing the list, each test's Plan, its printed forms, its exit status. */
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/exit.js';
import { finishResult } from '../src/run.js';
import {
  comparisonTable,
  CSV_HEADER,
  csvLine,
  parseTests,
  planForCommand,
  planForTest,
  quietLine,
  seedForTest,
  SUITE_NAMES,
  withBenchmarkDefaults,
} from '../src/suite.js';
import { worstExitCode } from '../src/suite-output.js';
import { UsageError } from '../src/usage-error.js';
import { checkCommandWords, checkSuiteFlags } from '../src/validate.js';
import { planOf, rawResult } from './fixtures.js';

describe('parseTests', () => {
  it("runs redis-benchmark's fixed order whatever the order given; lrange is all four, ping both pings", () => {
    expect(parseTests(' GET, set ,lrange').map((t) => t.name)).toEqual(['set', 'get', 'lrange_100', 'lrange_300', 'lrange_500', 'lrange_600']);
    expect(parseTests('mset,ping,get,set').map((t) => t.label)).toEqual(['PING_INLINE', 'PING_MBULK', 'SET', 'GET', 'MSET (10 keys)']);
    expect(parseTests('ping_mbulk,zpopmin,ping_inline').map((t) => t.name)).toEqual(['ping_inline', 'ping_mbulk', 'zpopmin']);
    expect(parseTests('set,set,SET')).toHaveLength(1);
  });

  it('knows every name it lists', () => {
    expect(parseTests(SUITE_NAMES.join(',')).map((t) => t.name)).toEqual(SUITE_NAMES);
  });

  it('refuses an unknown name and an empty list', () => {
    expect(() => parseTests('set,frob')).toThrow(/-t\/--tests: unknown test "frob"/);
    expect(() => parseTests(' , ')).toThrow(UsageError);
  });
});

describe('planForTest', () => {
  const bench = (args: string[] = []) => {
    const given = new Set(args.filter((a) => a.startsWith('-')).map((a) => ({ '-r': 'keyspace', '-c': 'connections', '-P': 'pipeline', '-n': 'requests', '-d': 'valueSize', '--key-prefix': 'keyPrefix' })[a] ?? a));
    return withBenchmarkDefaults(planOf(args), (o) => given.has(o));
  };

  it("takes redis-benchmark's defaults for what the command line leaves out", () => {
    expect(bench()).toMatchObject({ connections: 50, pipeline: 1, requests: 100000, valueSizeMin: 3, valueSizeMax: 3, keyPrefix: '', randIntLiteral: true });
    expect(bench(['-c', '4', '-P', '16', '-n', '10', '-d', '8', '-r', '1000'])).toMatchObject({ connections: 4, pipeline: 16, requests: 10, valueSizeMin: 8, keyspace: 1000, randIntLiteral: false });
  });

  it("sends redis-benchmark's commands with its key names, reads as gets", () => {
    const [set, get, incr, zadd, mset] = parseTests('set,get,incr,zadd,mset');
    expect(planForTest(bench(), set)).toMatchObject({ mode: 'set', setCmd: 'SET key:__rand_int__ __data__', literalCommands: true, randIntLiteral: true, verifyGet: false, preload: false });
    expect(planForTest(bench(), get)).toMatchObject({ mode: 'get', getCmd: 'GET key:__rand_int__' });
    expect(planForTest(bench(), incr).setCmd).toBe('INCR counter:__rand_int__');
    // ZADD's score is 0 without -r and a draw with it.
    expect(planForTest(bench(), zadd).setCmd).toBe('ZADD myzset 0 element:__rand_int__');
    expect(planForTest(bench(['-r', '10']), zadd).setCmd).toBe('ZADD myzset __rand_int__ element:__rand_int__');
    // Ten keys, each its own draw.
    expect(planForTest(bench(), mset).setCmd).toBe(`MSET${' key:__rand_int__ __data__'.repeat(10)}`);
    // --key-prefix, a respbench addition, goes before every key name.
    expect(planForTest(bench(['--key-prefix', 'p:']), get).getCmd).toBe('GET p:key:__rand_int__');
  });

  it('each test draws afresh: GET does not replay the numbers SET drew', () => {
    const [set, get] = parseTests('set,get');
    expect(planForTest(bench(), set).seed).not.toBe(planForTest(bench(), get).seed);
    expect(seedForTest(42, set)).toBe(seedForTest(42, set));
  });

  it('LRANGE tests fill their list with LPUSH first', () => {
    const [lrange] = parseTests('lrange_100');
    expect(lrange.fill?.name).toBe('lpush');
    expect(planForTest(bench(), lrange).getCmd).toBe('LRANGE mylist 0 99');
  });

  it('a command on the line is sent as written, as the only command', () => {
    expect(planForCommand(bench(), ['INCR', 'counter:__rand_int__'])).toMatchObject({ mode: 'set', setCmd: 'INCR counter:__rand_int__', literalCommands: true, randIntLiteral: true });
    expect(() => checkCommandWords(['SET', 'a b', 'c'])).toThrow(UsageError);
    expect(() => checkCommandWords(['SET', 'k', '"v'])).toThrow(UsageError);
    expect(() => checkCommandWords(['INCR', 'counter:__rand_int__'])).not.toThrow();
  });
});

describe('checkSuiteFlags', () => {
  it('refuses flags the suite would ignore, and prefixes that would split an argument', () => {
    expect(() => checkSuiteFlags(planOf(), (f) => f === 'setRatio')).toThrow('--set-ratio does not go with -t/--tests');
    expect(() => checkSuiteFlags(planOf(['--key-prefix', 'a__b']), () => false)).toThrow(/--key-prefix must not contain/);
    expect(() => checkSuiteFlags(planOf(), () => false)).not.toThrow();
  });
});

describe('printed forms', () => {
  const line = (over = {}) => ({ test: 'set', label: 'SET', result: finishResult(planOf(), rawResult(over)) });

  it('redis-benchmark -q', () => {
    expect(quietLine(line())).toMatch(/^SET: 2000\.00 requests per second, p50=0\.\d{3} msec$/);
    expect(quietLine(line({ errors: 2, firstError: 'ERR x' }))).toMatch(/\(2 error replies, first: ERR x\)$/);
    expect(quietLine(line({ failure: { kind: 'closed', message: 'gone' } }))).toMatch(/\(FAILED: closed\)$/);
  });

  it('a test whose replies were all errors shows no rate, only the count and the first error', () => {
    expect(quietLine(line({ errors: 1000, firstError: "ERR unknown command 'incr'" }))).toBe("SET: all 1000 replies were errors, first: ERR unknown command 'incr'");
  });

  it('redis-benchmark --csv, quoted', () => {
    expect(CSV_HEADER.split(',')).toHaveLength(9);
    const cells = csvLine({ ...line(), label: 'MSET "10"' }, 150, 90).split(',');
    expect(cells[0]).toBe('"MSET ""10"""');
    expect(cells.slice(1, 4)).toEqual(['"2000.00"', cells[2], '"0.090"']);
    expect(cells[5]).toBe('"0.150"');
    expect(cells[8]).toBe('"0"');
    expect(csvLine(line({ errors: 1000 }), 150, 90).split(',').slice(0, 2)).toEqual(['"SET"', '""']);
  });

  it('two targets side by side, with the ratio unless errors make it meaningless', () => {
    const a = finishResult(planOf(), rawResult());
    const b = finishResult(planOf(), rawResult({ elapsedNs: 1_000_000_000 }));
    const bad = finishResult(planOf(), rawResult({ errors: 1 }));
    const table = comparisonTable(
      [
        { label: 'SET', a, b },
        { label: 'GET', a, b: bad },
      ],
      'kvstore',
      'redis',
    ).split('\n');
    // Every ratio is "this target as % of the second": kvstore at 2000 ops/s against redis at 1000 is 200%.
    expect(table[0]).toMatch(/^\| test +\| kvstore ops\/s +\| redis ops\/s +\| kvstore vs redis +\| kvstore p50 ms +\| redis p50 ms +\|$/);
    expect(table[2]).toMatch(/^\| SET +\| 2000\.00 +\| 1000\.00 +\| 200\.0% +\|/);
    expect(table[3]).toMatch(/\| 2000\.00 \(errors\) +\| n\/a +\|/);
  });
});

describe('worstExitCode', () => {
  it('a run that broke off outranks verify failures and error replies; an interrupt outranks all', () => {
    expect(worstExitCode([])).toBe(EXIT.ok);
    expect(worstExitCode([EXIT.ok, EXIT.errorReplies, EXIT.ok])).toBe(EXIT.errorReplies);
    expect(worstExitCode([EXIT.errorReplies, EXIT.verifyFailed])).toBe(EXIT.verifyFailed);
    expect(worstExitCode([EXIT.verifyFailed, EXIT.failed, EXIT.errorReplies])).toBe(EXIT.failed);
    expect(worstExitCode([EXIT.failed, EXIT.sigint])).toBe(EXIT.sigint);
  });
});
