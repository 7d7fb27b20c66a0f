/**
 * The JS engine's --rate runs without V8's optimising compilers (jit.ts):
 * which runs turn them off, that they come back on after, and that a
 * process started with its own compiler flags is left alone.
 */
import { describe, expect, it } from 'vitest';
import { compilersChosenAtStart, optimisingCompilersOffFor, UNOPTIMISED_RATE_LIMIT } from '../src/engine-js/jit.js';

function recorder(): { calls: string[]; set: (flags: string) => void } {
  const calls: string[] = [];
  return { calls, set: (flags) => calls.push(flags) };
}

describe('the optimising compilers under --rate', () => {
  it('are off for a paced run at or under the limit, and on again once it ends (once)', () => {
    for (const rate of [1, 20_000, UNOPTIMISED_RATE_LIMIT]) {
      const v8 = recorder();
      const backOn = optimisingCompilersOffFor(rate, v8.set, false);
      expect(v8.calls).toHaveLength(1);
      expect(v8.calls[0]).toMatch(/^--no-turbofan( --no-maglev)?$/);
      backOn();
      backOn();
      expect(v8.calls).toEqual([v8.calls[0], v8.calls[0].replace(/--no-/g, '--')]);
    }
  });

  it('stay as they are in a closed loop and above the limit, where throughput needs them', () => {
    for (const rate of [0, UNOPTIMISED_RATE_LIMIT + 1, 200_000]) {
      const v8 = recorder();
      optimisingCompilersOffFor(rate, v8.set, false)();
      expect(v8.calls).toEqual([]);
    }
  });

  it('stay as node was started when its flags chose them', () => {
    const v8 = recorder();
    optimisingCompilersOffFor(20_000, v8.set, true)();
    expect(v8.calls).toEqual([]);
    expect(compilersChosenAtStart(['--no-opt'], '')).toBe(true);
    expect(compilersChosenAtStart([], '--jitless')).toBe(true);
    expect(compilersChosenAtStart(['--turbofan'], '')).toBe(true);
    expect(compilersChosenAtStart(['--max-old-space-size=4096', '--enable-source-maps'], '--optimize-for-size')).toBe(false);
    expect(compilersChosenAtStart([], '')).toBe(false);
  });
});
