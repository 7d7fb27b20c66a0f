/**
 * The JS engine's --rate runs without V8's optimising compilers (jit.ts):
 * which runs turn them off, that they come back on after (after the last of
 * runs that overlap), and that a process started with its own compiler
 * flags is left alone.
 */
import { describe, expect, it } from 'vitest';
import { compilersChosenAtStart, OPTIMISING_COMPILERS, optimisingCompilersOffFor, UNOPTIMISED_RATE_LIMIT } from '../src/engine-js/jit.js';

function recorder(): { calls: string[]; set: (flags: string) => void } {
  const calls: string[] = [];
  return { calls, set: (flags) => calls.push(flags) };
}

const OFF = OPTIMISING_COMPILERS.map((f) => `--no-${f}`).join(' ');
const ON = OPTIMISING_COMPILERS.map((f) => `--${f}`).join(' ');

describe('the optimising compilers under --rate', () => {
  it('are off for a paced run at or under the limit, and on again once it ends (once)', () => {
    // Maglev is V8's default from 11.7 (Node 22): then it goes off too.
    expect(OPTIMISING_COMPILERS).toEqual(Number(process.versions.node.split('.')[0]) >= 21 ? ['turbofan', 'maglev'] : ['turbofan']);
    for (const rate of [1, 20_000, UNOPTIMISED_RATE_LIMIT]) {
      const v8 = recorder();
      const backOn = optimisingCompilersOffFor(rate, v8.set, false);
      expect(v8.calls).toEqual([OFF]);
      backOn();
      backOn();
      expect(v8.calls).toEqual([OFF, ON]);
    }
  });

  it('come back on only when the last of overlapping paced runs ends', () => {
    const v8 = recorder();
    const first = optimisingCompilersOffFor(10_000, v8.set, false);
    const second = optimisingCompilersOffFor(10_000, v8.set, false);
    first();
    expect(v8.calls).toEqual([OFF]);
    second();
    expect(v8.calls).toEqual([OFF, ON]);
  });

  it('stay as they are in a closed loop and above the limit, where throughput needs them', () => {
    for (const rate of [0, UNOPTIMISED_RATE_LIMIT + 1, 200_000]) {
      const v8 = recorder();
      optimisingCompilersOffFor(rate, v8.set, false)();
      expect(v8.calls).toEqual([]);
    }
  });

  it('stay as node was started when its flags chose them, however V8 spells them', () => {
    const v8 = recorder();
    optimisingCompilersOffFor(20_000, v8.set, true)();
    expect(v8.calls).toEqual([]);
    for (const flag of ['--no-opt', '--turbofan', '--no_turbofan', '--noturbofan', '--max-opt=0', '--max_opt=2', '--lite-mode', '--always_turbofan', '--no-maglev']) {
      expect(compilersChosenAtStart([flag], ''), flag).toBe(true);
    }
    expect(compilersChosenAtStart([], '--jitless')).toBe(true);
    expect(compilersChosenAtStart([], '--max-old-space-size=4096 --no-turbofan')).toBe(true);
    expect(compilersChosenAtStart(['--max-old-space-size=4096', '--enable-source-maps'], '--optimize-for-size')).toBe(false);
    expect(compilersChosenAtStart(['--expose-gc'], '--max-semi-space-size=64')).toBe(false);
    expect(compilersChosenAtStart([], '')).toBe(false);
  });
});
