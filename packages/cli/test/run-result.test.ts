/**
 * The RunResult `--json` prints: version 2 carries the Plan as `plan` (it was
 * `workload` before), beside the engine's RawResult fields unchanged.
 */
import { describe, expect, it } from 'vitest';
import { newCounters } from '../src/engine-js/counters.js';
import { LatencyHistogram } from '../src/engine-js/histogram.js';
import type { Plan, RawResult } from '../src/engine-js/plan.js';
import { finishResult, RUN_RESULT_VERSION } from '../src/run.js';

const plan = { host: '127.0.0.1', port: 6379, requests: 2, durationMs: 0, rate: 0, mode: 'set', verifyGet: false } as Plan;

function raw(): RawResult {
  const h = new LatencyHistogram();
  h.record(1000);
  h.record(3000);
  return {
    engine: 'js',
    ...newCounters(),
    requests: 2,
    sets: 2,
    ok: 2,
    elapsedNs: 1e6,
    histogram: h.toData(),
    preloadRequests: 0,
    preloadElapsedNs: 0,
    failure: null,
  };
}

describe('finishResult', () => {
  it('says version 2 and holds the Plan as plan, not workload', () => {
    const r = finishResult(plan, raw());
    expect(RUN_RESULT_VERSION).toBe(2);
    expect(r.version).toBe(2);
    expect(r.plan).toBe(plan);
    expect('workload' in r).toBe(false);
    expect(Object.keys(JSON.parse(JSON.stringify(r)))[0]).toBe('version');
  });

  it('keeps the RawResult fields and derives the figures', () => {
    const r = finishResult(plan, raw());
    expect(r).toMatchObject({ engine: 'js', requests: 2, sets: 2, ok: 2, errors: 0, firstError: null, complete: true, elapsedSec: 0.001, opsPerSec: 2000 });
    expect(r.latencyUs.max).toBeGreaterThanOrEqual(3);
  });
});
