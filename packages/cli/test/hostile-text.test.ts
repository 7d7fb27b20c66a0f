import { describe, expect, it } from 'vitest';
import { checkArgvText } from '../src/argv-text.js';
import { printable, printableTarget, shownQuoted } from '../src/printable.js';
import { StudyProgress } from '../src/study/progress.js';
import { comparisonTable, SUITE } from '../src/suite.js';
import { checkSuiteFlags } from '../src/validate.js';
import { UsageError } from '../src/usage-error.js';
import { planOf } from './fixtures.js';

describe('printable: user and server text on a terminal', () => {
  it('escapes controls, invisible and bidi characters; leaves other text alone', () => {
    expect(printable('bench:key:')).toBe('bench:key:');
    expect(printable('café ✓ 日本')).toBe('café ✓ 日本');
    expect(printable('p\u001b[31m\r\n\t:')).toBe('p\\x1b[31m\\r\\n\\t:');
    expect(printable('a\u0000\u007f\u0085\u00a0b')).toBe('a\\x00\\x7f\\x85\\xa0b');
    expect(printable('\ufeffx\u2028\u202e\u200b')).toBe('\\u{feff}x\\u{2028}\\u{202e}\\u{200b}');
    expect(printable('lone \ud800')).toBe('lone \\u{d800}');
    // Idempotent: what it writes has nothing left to escape.
    expect(printable(printable('\u001b\ufeff'))).toBe(printable('\u001b\ufeff'));
  });

  it('shownQuoted is JSON-like and escapes what JSON.stringify leaves raw', () => {
    expect(shownQuoted('a "b"\n')).toBe('"a \\"b\\"\\n"');
    expect(shownQuoted('\u0085\ufeff')).toBe('"\\u0085\\ufeff"');
  });

  it('an IPv6 target is shown in brackets', () => {
    expect(printableTarget('::1', 6379)).toBe('[::1]:6379');
    expect(printableTarget('127.0.0.1', 6379)).toBe('127.0.0.1:6379');
  });

  it('study progress escapes a scenario label and a failure', () => {
    let out = '';
    const p = new StudyProgress({ stderr: (t) => (out += t) }, 1, false, true);
    p.runFinished({ scenarioIndex: 1, scenarioCount: 1, label: 'x\u001b[2J', mode: 'set', round: 1, rounds: 1 }, 'ok', 'FAILED \r');
    expect(out).not.toMatch(/[\u001b\r]/);
    expect(out).toContain('x\\x1b[2J');
  });
});

describe('command-line text must be UTF-8', () => {
  const bad = Buffer.from([0x61, 0xff, 0x62]);
  it('refuses an argument whose raw bytes are not UTF-8, naming its flag', () => {
    expect(() => checkArgvText(['--key-prefix', 'a\ufffdb'], [Buffer.from('--key-prefix'), bad])).toThrow(/^--key-prefix is not valid UTF-8/);
    expect(() => checkArgvText(['--key-prefix=a\ufffdb'], [Buffer.concat([Buffer.from('--key-prefix='), bad])])).toThrow(/^--key-prefix is not valid UTF-8/);
    expect(() => checkArgvText(['serve', 'a\ufffdb'], [Buffer.from('serve'), bad])).toThrow(/^argument 2 /);
  });

  it('lets a U+FFFD that was typed as UTF-8 through; refuses any U+FFFD when the raw bytes are unknown', () => {
    expect(() => checkArgvText(['--key-prefix', 'a\ufffdb'], [Buffer.from('--key-prefix'), Buffer.from('a\ufffdb')])).not.toThrow();
    expect(() => checkArgvText(['--key-prefix', 'a\ufffdb'], null)).toThrow(UsageError);
    expect(() => checkArgvText(['--key-prefix', 'plain'], null)).not.toThrow();
  });
});

describe('the suite and the template grammar', () => {
  const plan = (keyPrefix: string) => ({ keyPrefix }) as Parameters<typeof checkSuiteFlags>[0];
  it.each(['a"b', "a'b", 'a\u00a0b', 'a\u001bb', 'x_', 'a\tb'])('refuses the prefix %j with -t', (prefix) => {
    expect(() => checkSuiteFlags(plan(prefix), () => false)).toThrow(/--key-prefix/);
  });

  it('accepts ordinary prefixes, and every suite command parses with them', () => {
    for (const prefix of ['', 'bench:', 'app_1:', 'café:', 'a\\b:']) expect(() => checkSuiteFlags(plan(prefix), () => false), prefix).not.toThrow();
    expect(SUITE.length).toBeGreaterThan(10);
  });

  it('the comparison table says which side was interrupted', () => {
    const result = (failure: unknown) => ({ opsPerSec: 10, errors: 0, failure, latencyUs: { p50: 1 } }) as never;
    const table = comparisonTable([{ label: 'SET', a: result(null), b: result({ kind: 'interrupted', message: 'interrupted' }) }], 'A', 'B');
    expect(table).toContain('10.00 (interrupted)');
  });
});

describe('text the engines send must have UTF-8 bytes', () => {
  it('a key prefix or template with a lone surrogate (a study file escape) is refused, not sent as U+FFFD', () => {
    expect(() => planOf(['--key-prefix', 'a\ud800'])).toThrow(/^--key-prefix is not valid Unicode text/);
    expect(() => planOf(['--set-cmd', 'SET __key__ "\udc00"'])).toThrow(/^--set-cmd is not valid Unicode text/);
  });

  it('a bad template is a UsageError naming the flag, with the text escaped', () => {
    expect(() => planOf(['--get-cmd', 'GET\u00a0__key__'])).toThrow('--get-cmd has U+00A0 outside quotes (only ASCII spaces and tabs separate arguments; quote it to send it) (got "GET\\u00a0__key__")');
  });
});
