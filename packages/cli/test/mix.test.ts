/**
 * The command mix outside the engines: flags → Plan, row names, the time
 * series' folding and a study file's `commands:`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RawInterval } from '../src/engine-js/plan.js';
import { mixRowNames } from '../src/run.js';
import { addIntervals } from '../src/series.js';
import { studyRunFlags } from '../src/study/flags.js';
import { loadStudyFile } from '../src/study/spec.js';
import { planOf } from './fixtures.js';

describe('--command, --weight, --command-key-pattern', () => {
  it('a --weight and a --command-key-pattern belong to the --command before them', () => {
    const plan = planOf(['--command', 'GET __key__', '--weight', '80', '--command', 'SET', '--command', 'INCR c:__key__', '--command-key-pattern', 'zipf', '--weight', '5']);
    expect(plan.commands).toEqual([
      { template: 'GET __key__', weight: 80, keyPattern: null },
      { template: 'SET', weight: 1, keyPattern: null },
      { template: 'INCR c:__key__', weight: 5, keyPattern: 'zipf' },
    ]);
  });

  it('without --command the plan has no mix (its JSON is as before)', () => {
    expect(planOf([]).commands).toBeUndefined();
  });

  it.each([
    [['--weight', '2'], '--weight applies to the --command before it, and there is none'],
    [['--command', 'GET', '--weight', '2', '--weight', '3'], '--weight was given twice for one --command'],
    [['--command', 'GET', '--weight', '0'], '--weight must be a whole number from 1 to 1000000'],
    [['--command', 'GET', '--command-key-pattern', 'hot'], '--command-key-pattern must be one of'],
    [['--command', 'GET __data__ "'], '--command has an unclosed double quote'],
    [['--multi-key-get', '2', '--get-cmd', 'HGET __key__ f'], '--multi-key-get does not go with --get-cmd'],
    [['--mode', 'get', '--set-cmd', 'MSET __key__ __data__ __key__ __data__'], "--set-cmd names several keys, which get mode's preload cannot write"],
  ])('%j is refused naming the flag', (args, message) => {
    expect(() => planOf(args)).toThrow(message);
  });

  it('--multi-key-get N is the read command MGET of N keys', () => {
    expect(planOf(['--multi-key-get', '3']).getCmd).toBe('MGET __key__ __key__ __key__');
  });

  it('rows are named by command, numbered when two share a name', () => {
    const plan = planOf(['--command', 'SET', '--command', 'get __key__', '--command', 'SET __key__ __data__ NX', '--command', '"INCR" c:__key__']);
    expect(mixRowNames(plan)).toEqual(['SET#1', 'GET', 'SET#2', 'INCR']);
  });
});

describe('the time series of a mix', () => {
  const h = (v: number) => ({ unit: 'ns' as const, significantDigits: 3 as const, buckets: [[v, 1]] as [number, number][] });
  const interval = (i: number): RawInterval => ({
    index: i, startNs: i * 1e9, endNs: (i + 1) * 1e9, requests: 2, sets: 1, gets: 1, errors: 0, misses: 0, mismatches: 0, lostWrites: 0,
    setHistogram: h(1000), getHistogram: h(2000), commandHistograms: [h(1000), h(2000)],
  });

  it('a folded (or merged) interval adds each command histogram', () => {
    const sum = addIntervals(interval(0), interval(1));
    expect(sum.commandHistograms!.map((x) => x.buckets)).toEqual([[[1000, 2]], [[2000, 2]]]);
  });
});

describe('a study file commands: list', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'respbench-mix-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let written = 0;
  const write = (body: string) => {
    const file = path.join(dir, `s${written++}`, 's.yaml');
    mkdirSync(path.dirname(file));
    writeFileSync(file, body);
    return file;
  };
  const scenario = "scenarios:\n  - { name: a, target: { address: '127.0.0.1:6379' } }\n";

  it('becomes the flags --command/--weight/--command-key-pattern would give', () => {
    const spec = loadStudyFile(write(`modes: [mixed]\ndefaults:\n  commands:\n    - { command: 'GET __key__', weight: 80 }\n    - SET\n    - { command: INCR, keyPattern: zipf }\n${scenario}`), studyRunFlags());
    expect(spec.defaults.commands).toEqual([{ template: 'GET __key__', weight: '80' }, { template: 'SET' }, { template: 'INCR', keyPattern: 'zipf' }]);
  });

  it('needs modes [mixed], and names the line otherwise', () => {
    expect(() => loadStudyFile(write(`modes: [set, get]\ndefaults:\n  commands: [GET, SET]\n${scenario}`), studyRunFlags())).toThrow(/s\.yaml:3: scenario "a": commands \(a mix\) replace the mode/);
  });

  it('refuses a misspelt key in a command', () => {
    expect(() => loadStudyFile(write(`modes: [mixed]\ndefaults:\n  commands:\n    - { command: GET, wieght: 3 }\n${scenario}`), studyRunFlags())).toThrow(/unknown key "wieght" in commands\[0\]/);
  });
});
