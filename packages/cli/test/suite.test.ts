/** The -t suite's pure parts: parsing the list, each test's Plan, its printed forms, its exit status. */
import { describe, expect, it } from 'vitest';
import { EXIT } from '../src/exit.js';
import { finishResult } from '../src/run.js';
import { checkSuiteFlags, comparisonTable, CSV_HEADER, csvLine, parseTests, planForTest, quietLine, SUITE_NAMES } from '../src/suite.js';
import { worstExitCode } from '../src/suite-output.js';
import { UsageError } from '../src/validate.js';
import { planOf, rawResult } from './fixtures.js';

describe('parseTests', () => {
  it('keeps the order given; lrange is all four', () => {
    expect(parseTests(' GET, set ,lrange').map((t) => t.name)).toEqual(['get', 'set', 'lrange_100', 'lrange_300', 'lrange_500', 'lrange_600']);
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
  it('sends the test command literally, as writes, with the run prefix', () => {
    const [lpush] = parseTests('lpush');
    const plan = planForTest(planOf(['--mode', 'get', '--verify-get', '--key-prefix', 'p:']), lpush);
    expect(plan).toMatchObject({ mode: 'set', setCmd: 'LPUSH p:mylist __data__', literalCommands: true, verifyGet: false, preload: false, keyPrefix: 'p:' });
  });

  it('LRANGE tests fill their list with LPUSH first', () => {
    const [lrange] = parseTests('lrange_100');
    expect(lrange.fill?.name).toBe('lpush');
    expect(planForTest(planOf(), lrange).setCmd).toBe('LRANGE bench:key:mylist 0 99');
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
    expect(quietLine(line({ failure: { kind: 'closed', message: 'gone' } }))).toMatch(/\(FAILED: gone\)$/);
  });

  it('redis-benchmark --csv, quoted', () => {
    expect(CSV_HEADER.split(',')).toHaveLength(9);
    const cells = csvLine({ ...line(), label: 'MSET "10"' }, 150, 90).split(',');
    expect(cells[0]).toBe('"MSET ""10"""');
    expect(cells.slice(1, 4)).toEqual(['"2000.00"', cells[2], '"0.090"']);
    expect(cells[5]).toBe('"0.150"');
    expect(cells[8]).toBe('"0"');
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
      'A',
      'B',
    ).split('\n');
    expect(table[0]).toMatch(/^\| test +\| A ops\/s +\| B ops\/s +\| B\/A +\| A p50 ms +\| B p50 ms +\|$/);
    expect(table[2]).toMatch(/^\| SET +\| 2000\.00 +\| 1000\.00 +\| 50\.0% +\|/);
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
