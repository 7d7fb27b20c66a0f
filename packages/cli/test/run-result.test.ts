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
  it('says version 3 and holds the Plan as plan, not workload', () => {
    const r = finishResult(plan, raw());
    expect(RUN_RESULT_VERSION).toBe(3);
    expect(r.version).toBe(3);
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

describe('perCommand (issue 14)', () => {
  it('a row per command the mode sends, then Totals; the rows add up to Totals', async () => {
    const { finishResult, commandName } = await import('../src/run.js');
    const { planOf, rawResult } = await import('./fixtures.js');
    const set = { unit: 'ns' as const, significantDigits: 3 as const, buckets: [[1000, 3], [2000, 1]] as [number, number][] };
    const get = { unit: 'ns' as const, significantDigits: 3 as const, buckets: [[1000, 2], [5000, 4]] as [number, number][] };
    const histogram = { unit: 'ns' as const, significantDigits: 3 as const, buckets: [[1000, 5], [2000, 1], [5000, 4]] as [number, number][] };
    const r = finishResult(planOf(['--requests', '10', '--set-cmd', 'hset __key__ f __data__']), rawResult({ requests: 10, sets: 4, gets: 6, histogram, setHistogram: set, getHistogram: get }));
    expect(r.perCommand.map((c) => c.command)).toEqual(['HSET', 'GET', 'Totals']);
    expect(r.perCommand.map((c) => c.requests)).toEqual([4, 6, 10]);
    expect(r.perCommand[0].opsPerSec + r.perCommand[1].opsPerSec).toBeCloseTo(r.perCommand[2].opsPerSec, 9);
    expect(r.perCommand[2].latencyUs).toEqual(r.latencyUs);
    expect(commandName('  lpush mylist x')).toBe('LPUSH');
    const setOnly = finishResult(planOf(['--requests', '10', '--mode', 'set']), rawResult({ requests: 4, sets: 4, gets: 0, histogram: set, setHistogram: set, getHistogram: { ...get, buckets: [] } }));
    expect(setOnly.perCommand.map((c) => c.command)).toEqual(['SET', 'Totals']);
  });
});

describe('--percentiles (issue 14)', () => {
  it('parses a list and gives each percentile in the table order, for Totals and each command', async () => {
    const { parsePercentiles } = await import('../src/flag-values.js');
    const { finishResult } = await import('../src/run.js');
    const { formatFigures } = await import('../src/output.js');
    const { planOf, rawResult } = await import('./fixtures.js');
    expect(parsePercentiles('50,90,99,99.9,99.99')).toEqual([50, 90, 99, 99.9, 99.99]);
    expect(parsePercentiles('99, 50')).toEqual([50, 99]);
    for (const bad of ['', '0', '101', 'x', '50,50', '-1', '1e2']) expect(() => parsePercentiles(bad)).toThrow(/--percentiles/);
    const buckets: [number, number][] = [];
    for (let i = 1; i <= 10_000; i++) buckets.push([i * 1000, 1]);
    const h = new LatencyHistogram();
    for (const [v, c] of buckets) h.recordCount(v, c);
    const histogram = h.toData();
    const r = finishResult(planOf(['--requests', '10000', '--mode', 'set']), rawResult({ requests: 10_000, sets: 10_000, gets: 0, histogram, setHistogram: histogram, getHistogram: { ...histogram, buckets: [] } }), [50, 99.99]);
    expect(Object.keys(r.percentilesUs)).toEqual(['p50', 'p99.99']);
    expect(r.percentilesUs.p50).toBe(r.latencyUs.p50);
    expect(r.percentilesUs['p99.99']).toBeCloseTo(h.valueAtPercentile(99.99) / 1000, 3);
    expect(r.perCommand.map((c) => Object.keys(c.percentilesUs))).toEqual([['p50', 'p99.99'], ['p50', 'p99.99']]);
    const table = formatFigures(r).split('\n');
    expect(table.find((l) => l.includes('ops/s') && l.includes('avg'))!.trim().split(/\s{2,}/)).toEqual(['ops/s', 'avg us/op', 'elapsed s', 'p50 us', 'p99.99 us', 'max us']);
    // Without --percentiles: the columns users have always had.
    const plain = finishResult(planOf(['--requests', '10000']), rawResult());
    expect(Object.keys(plain.percentilesUs)).toEqual(['p50', 'p90', 'p99', 'p99.9']);
  });
});
