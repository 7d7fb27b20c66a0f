/**
 * compare's readers and verdicts without a server (issue 22 Deliver 1):
 * every kind of result respbench writes becomes rows of figures, the noise
 * test follows the data (rounds → Welch's t, intervals → block bootstrap,
 * capacity → the bracket), and a verdict reads the right way round.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summarize, summaryCsv, type RunRow } from '@respbench/report';
import { compareResults } from '../src/compare/compare.js';
import { mergeLatency, mergePercentiles } from '../src/study/latency.js';
import { readComparable } from '../src/compare/figures.js';
import { LatencyHistogram, type HistogramData } from '../src/engine-js/histogram.js';
import type { RawInterval } from '../src/engine-js/plan.js';
import { combineRounds } from '../src/repeat.js';
import { resultJsonText } from '../src/result-json.js';
import { finishResult, type RunResult } from '../src/run.js';
import { planOf, rawResult } from './fixtures.js';

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-compare-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): string {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
}

/** A set-mode run of `n` intervals of 100 ms, each with `perInterval` requests at about `latencyNs` (a little spread). */
function run(n: number, perInterval: number, latencyNs: number): RunResult {
  const plan = planOf(['--mode', 'set', '--duration', `${n / 10}s`]);
  const empty: HistogramData = { unit: 'ns', significantDigits: 3, buckets: [] };
  const all = new LatencyHistogram();
  const intervals: RawInterval[] = Array.from({ length: n }, (_, i) => {
    const h = new LatencyHistogram();
    for (let k = 0; k < perInterval; k++) h.record(latencyNs * (1 + ((k * 7 + i * 13) % 10) / 50));
    all.merge(h);
    return { index: i, startNs: i * 1e8, endNs: (i + 1) * 1e8, requests: perInterval, sets: perInterval, gets: 0, errors: 0, misses: 0, mismatches: 0, lostWrites: 0, setHistogram: h.toData(), getHistogram: empty };
  });
  const requests = n * perInterval;
  return finishResult(plan, rawResult({ requests, sets: requests, gets: 0, ok: requests, elapsedNs: n * 1e8, histogram: all.toData(), setHistogram: all.toData(), getHistogram: empty, intervals }));
}

describe('compare reads every result kind', () => {
  it('runs: per command and Totals, a block bootstrap over their intervals; slower is worse, the same within noise', () => {
    const base = write('base.json', resultJsonText(run(20, 1000, 100_000)));
    const same = write('same.json', resultJsonText(run(20, 1000, 100_000)));
    const slow = write('slow.json', resultJsonText(run(20, 500, 200_000)));
    const worse = compareResults(readComparable(base), readComparable(slow));
    expect(worse.noise).toMatch(/^block bootstrap over the recorded intervals \(BASE 20, NEW 20;/);
    const totals = (name: string) => worse.figures.find((f) => f.row === 'Totals' && f.figure === name)!;
    expect(totals('ops')).toMatchObject({ percent: 50, verdict: 'worse' });
    expect(totals('p50').percent).toBeCloseTo(200, 0);
    expect(totals('p50').verdict).toBe('worse');
    const better = compareResults(readComparable(slow), readComparable(base));
    expect(better.figures.filter((f) => f.row === 'Totals').map((f) => f.verdict)).toEqual(['better', 'better', 'better', 'better', 'better']);
    expect(compareResults(readComparable(base), readComparable(same)).figures.every((f) => f.verdict === 'within noise')).toBe(true);
  });

  it('-x rounds: Welch\'s t over the rounds', () => {
    const rounds = (ops: number[]) => {
      const runs = ops.map((perInterval) => run(5, perInterval, 100_000));
      return write(`x-${ops.join('-')}.json`, resultJsonText(combineRounds(runs[0].plan, runs)));
    };
    const base = readComparable(rounds([1000, 1010, 990]));
    const c = compareResults(base, readComparable(rounds([995, 1012, 1001])));
    expect(c.noise).toMatch(/^Welch's t-test over the rounds \(BASE 3, NEW 3;/);
    expect(c.figures.find((f) => f.row === 'Totals' && f.figure === 'ops')!.verdict).toBe('within noise');
    expect(compareResults(base, readComparable(rounds([800, 810, 790]))).figures.find((f) => f.row === 'Totals' && f.figure === 'ops')!.verdict).toBe('worse');
    // Rounds of a server held to an exact rate: a change under 1% is within noise however tight its interval; 1.5% is not.
    const exact = readComparable(rounds([10000, 10001, 9999]));
    const ops = (next: number[]) => compareResults(exact, readComparable(rounds(next))).figures.find((f) => f.row === 'Totals' && f.figure === 'ops')!;
    expect(ops([10080, 10081, 10079])).toMatchObject({ verdict: 'within noise', percent: expect.closeTo(100.8, 1) });
    expect(ops([10080, 10081, 10079]).interval![0]).toBeGreaterThan(100);
    expect(ops([10150, 10151, 10149]).verdict).toBe('better');
    // A latency percentile: a move under 5% is within noise however tight its interval; 8% is not.
    const latencyRounds = (latencies: number[]) =>
      readComparable(write(`lat-${latencies.join('-')}.json`, resultJsonText(combineRounds(run(5, 1000, latencies[0]).plan, latencies.map((l) => run(5, 1000, l))))));
    const slowBase = latencyRounds([8_000_000, 8_001_000, 7_999_000]);
    const p50 = (next: number[]) => compareResults(slowBase, latencyRounds(next)).figures.find((f) => f.row === 'Totals' && f.figure === 'p50')!;
    expect(p50([8_290_000, 8_291_000, 8_289_000])).toMatchObject({ verdict: 'within noise', percent: expect.closeTo(103.6, 0) });
    expect(p50([8_290_000, 8_291_000, 8_289_000]).interval![0]).toBeGreaterThan(100);
    expect(p50([8_640_000, 8_641_000, 8_639_000]).verdict).toBe('worse');
  });

  it('a -t suite: a row per test', () => {
    const suite = (r: RunResult) => write(`suite-${r.requests}.json`, resultJsonText([{ test: 'set', label: 'SET', result: r }, { test: 'get', label: 'GET', result: r }]));
    const c = compareResults(readComparable(suite(run(10, 1000, 100_000))), readComparable(suite(run(10, 900, 100_000))));
    expect([...new Set(c.figures.map((f) => f.row))]).toEqual(['SET', 'GET']);
    expect(c.figures[0]).toMatchObject({ figure: 'ops', percent: 90 });
  });

  it('a capacity search: within noise inside BASE\'s bracket, better above it', () => {
    const search = (capacity: number, met: number, failed: number) =>
      write(`cap-${capacity}.json`, JSON.stringify({ kind: 'capacity', version: 1, engine: 'js', plan: { mode: 'set', setCmd: 'SET', rate: capacity }, slo: { text: 'p99<=1ms' }, capacity, bracket: { met, failed } }, null, 2));
    const base = readComparable(search(10000, 10000, 10500));
    expect(compareResults(base, readComparable(search(10300, 10300, 10800))).figures[0]).toMatchObject({ verdict: 'within noise' });
    expect(compareResults(base, readComparable(search(12000, 12000, 12500))).figures[0]).toMatchObject({ verdict: 'better', percent: 120 });
    expect(compareResults(base, readComparable(search(9000, 9000, 9400))).noise).toMatch(/brackets/);
  });

  it("a study's summary CSV (as the study writes it): a row per label, the rounds' ops/s as its noise, percentiles without an estimate", () => {
    const row = (round: number, ops: number): RunRow => ({
      group: 'Redis', scenario: 'none', tags: ['none'], target: 'test', mode: 'set', round, status: 'ok', error: '',
      opsPerSec: ops, avgUsPerOp: 1e6 / ops, elapsedSec: 1, latencyUs: { p50: 400, p90: 600, p99: 900, p999: 1500, max: 3000, mean: 450 },
      answered: ops, ok: ops, errors: 0, misses: 0, mismatches: 0, engine: 'native', startedAt: '2026-03-05T07:59:54.000Z', flags: {},
      histogram: { unit: 'ns', significantDigits: 3, buckets: [[399_872, ops - 10], [1_499_136, 10]] },
    });
    const study = { rounds: 3, modes: ['set'], groups: [{ title: 'Redis', scenarios: [{ name: 'none', tags: ['none'] }] }] };
    const percentiles = [50, 99.9];
    const csv = (ops: number[]) => summaryCsv(summarize(ops.map((o, i) => row(i + 1, o)), study, { mergeLatency, mergePercentiles, percentiles }), undefined, percentiles);
    const base = readComparable(write('a.csv', csv([1000, 1020, 980])));
    expect(base.rows.map((r) => r.name)).toEqual([base.rows[0].name]);
    expect(Object.keys(base.rows[0].figures)).toEqual(['ops', 'p50', 'p99.9']);
    expect(base.rows[0].units).toMatchObject({ kind: 'rounds', values: [{ ops: 1000 }, { ops: 1020 }, { ops: 980 }] });
    const c = compareResults(base, readComparable(write('b.csv', csv([700, 710, 690]))));
    expect(c.figures.map((f) => [f.figure, f.verdict])).toEqual([['ops', 'worse'], ['p50', 'no noise estimate'], ['p99.9', 'no noise estimate']]);
    expect(c.figures[0].percent).toBeCloseTo(70, 6);
  });
});
