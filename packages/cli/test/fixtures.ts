/** A Plan and RawResults to format, built the way the CLI builds them. */
import { Command } from 'commander';
import type { Plan, RawResult } from '../src/engine-js/plan.js';
import { addRunOptions } from '../src/run-options.js';
import { buildPlan, type RawRunOptions } from '../src/validate.js';

/** The Plan the CLI makes of `args` (seed fixed at 42 unless given). */
export function planOf(args: string[] = []): Plan {
  const cmd = addRunOptions(new Command()).exitOverride();
  cmd.parse(['--seed', '42', ...args], { from: 'user' });
  return buildPlan(cmd.opts() as RawRunOptions).plan;
}

/** 1000 replies in 0.5 s: half at 100 us, half at 200 us. */
export function rawResult(over: Partial<RawResult> = {}): RawResult {
  return {
    engine: 'js',
    requests: 1000,
    sets: 500,
    gets: 500,
    ok: 1000,
    errors: 0,
    misses: 0,
    mismatches: 0,
    lostWrites: 0,
    pushes: 0,
    bytesOut: 123_456,
    bytesIn: 2_500_000,
    elapsedNs: 500_000_000,
    histogram: { unit: 'ns', significantDigits: 3, buckets: [[100_000, 500], [200_000, 500]] },
    preloadRequests: 0,
    preloadElapsedNs: 0,
    firstError: null,
    firstMismatch: null,
    failure: null,
    ...over,
  };
}
