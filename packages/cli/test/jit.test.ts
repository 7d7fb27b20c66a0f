/**
 * The JS engine's --rate runs without V8's optimising compilers (jit.ts):
 * which runs turn them off, that they come back on after (after the last of
 * runs that overlap), and that a process started with its own compiler
 * flags is left alone.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import { compilersChosenAtStart, OPTIMISING_COMPILERS, optimisingCompilersOffFor, UNOPTIMISED_RATE_LIMIT, watchSchedule } from '../src/engine-js/jit.js';

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
      const backOn = optimisingCompilersOffFor(rate, v8.set, false)!;
      expect(v8.calls).toEqual([OFF]);
      backOn();
      backOn();
      expect(v8.calls).toEqual([OFF, ON]);
    }
  });

  it('come back on only when the last of overlapping paced runs ends', () => {
    const v8 = recorder();
    const first = optimisingCompilersOffFor(10_000, v8.set, false)!;
    const second = optimisingCompilersOffFor(10_000, v8.set, false)!;
    first();
    expect(v8.calls).toEqual([OFF]);
    second();
    expect(v8.calls).toEqual([OFF, ON]);
  });

  it('stay as they are in a closed loop and above the limit, where throughput needs them', () => {
    for (const rate of [0, UNOPTIMISED_RATE_LIMIT + 1, 200_000]) {
      const v8 = recorder();
      expect(optimisingCompilersOffFor(rate, v8.set, false)).toBeNull();
      expect(v8.calls).toEqual([]);
    }
  });

  it('stay as node was started when its flags chose them, however V8 spells them', () => {
    const v8 = recorder();
    expect(optimisingCompilersOffFor(20_000, v8.set, true)).toBeNull();
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

describe('a paced run that falls behind with the compilers off', () => {
  afterEach(() => vi.useRealTimers());

  /** Records `count` sends `lateMs` late into the lag histogram. */
  const send = (lag: LatencyHistogram, count: number, lateMs: number) => lag.recordCount(lateMs * 1e6, count);

  it('turns them back on once over a tenth of the sends of two looks in a row went out 1 ms late, and says so once', () => {
    vi.useFakeTimers();
    const lag = new LatencyHistogram();
    const calls: string[] = [];
    const stop = watchSchedule(lag, () => calls.push('on'), (line) => calls.push(line));
    send(lag, 100, 0.05);
    vi.advanceTimersByTime(250);
    send(lag, 20, 1.5);
    send(lag, 80, 0.1);
    vi.advanceTimersByTime(250);
    // One look behind is not enough: a single stall (a cut, the machine) passes.
    expect(calls).toEqual([]);
    send(lag, 15, 5);
    send(lag, 85, 0.2);
    vi.advanceTimersByTime(250);
    expect(calls[0]).toBe('on');
    expect(calls[1]).toMatch(/fell behind the --rate schedule with V8's optimising compilers off/);
    send(lag, 100, 9);
    vi.advanceTimersByTime(1000);
    expect(calls).toHaveLength(2);
    stop();
  });

  it('leaves them off while the schedule is kept: a tenth late or fewer', () => {
    vi.useFakeTimers();
    const lag = new LatencyHistogram();
    const calls: string[] = [];
    const stop = watchSchedule(lag, () => calls.push('on'), (line) => calls.push(line));
    for (let i = 0; i < 20; i++) {
      send(lag, 90, 0.9);
      send(lag, 10, 4);
      vi.advanceTimersByTime(250);
    }
    expect(calls).toEqual([]);
    stop();
  });
});
