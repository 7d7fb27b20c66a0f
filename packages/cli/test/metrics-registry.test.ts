/**
 * The live metrics' arithmetic without a server: intervals folded into the
 * counters and the classic buckets, the end of a run squaring the counters
 * with its result, several runs adding up, and both exposition formats
 * (checked by promtool, Prometheus's own checker, where it is installed).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { RawInterval } from '../src/engine-js/plan.js';
import { render } from '../src/metrics/exposition.js';
import { foldDurations, LiveMetrics, outcomesOf } from '../src/metrics/registry.js';
import { packets, statsdLines } from '../src/metrics/statsd.js';
import { finishResult } from '../src/run.js';
import { planOf, rawResult } from './fixtures.js';

const h = (buckets: [number, number][]) => ({ unit: 'ns' as const, significantDigits: 3 as const, buckets });

function interval(index: number, over: Partial<RawInterval> = {}): RawInterval {
  return {
    index,
    startNs: index * 1e9,
    endNs: (index + 1) * 1e9,
    requests: 300,
    sets: 150,
    gets: 150,
    errors: 0,
    misses: 0,
    mismatches: 0,
    lostWrites: 0,
    setHistogram: h([[100_000, 150]]),
    getHistogram: h([[200_000, 150]]),
    connections: 4,
    bytesOut: 10_000,
    bytesIn: 20_000,
    lost: 0,
    ...over,
  };
}

/** The value of the one sample line that starts with `prefix` (labels included). */
function sample(text: string, prefix: RegExp): number[] {
  return text
    .split('\n')
    .filter((l) => prefix.test(l))
    .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
}

describe('LiveMetrics', () => {
  it('counts intervals as they come and ends equal to the result, whatever the intervals missed', () => {
    const plan = planOf(['--mode', 'set', '-c', '4']);
    const m = new LiveMetrics();
    m.startRun(plan, 'native');
    m.addInterval(interval(0, { requests: 150, gets: 0, getHistogram: h([]) }));
    const mid = render(m, 'prometheus');
    expect(sample(mid, /^respbench_requests_total\{.*command="SET",outcome="ok"\}/)).toEqual([150]);
    expect(sample(mid, /^respbench_running\{/)).toEqual([1]);
    // The result counted 1000: the replies in flight at the end came after the last interval.
    m.endRun(finishResult(plan, rawResult({ requests: 1000, sets: 1000, gets: 0, setHistogram: h([[100_000, 900], [3_000_000, 100]]), getHistogram: h([]) })));
    const end = render(m, 'prometheus');
    expect(sample(end, /^respbench_requests_total\{.*outcome="ok"\}/)).toEqual([1000]);
    expect(sample(end, /^respbench_request_duration_seconds_count\{.*command="SET"\}/)).toEqual([1000]);
    // 100 us is in the 0.0001 bucket, 3 ms first in the 0.005 one.
    expect(sample(end, /^respbench_request_duration_seconds_bucket\{.*le="0.0001"\}/)).toEqual([900]);
    expect(sample(end, /^respbench_request_duration_seconds_bucket\{.*le="0.0025"\}/)).toEqual([900]);
    expect(sample(end, /^respbench_request_duration_seconds_bucket\{.*le="0.005"\}/)).toEqual([1000]);
    expect(sample(end, /^respbench_bytes_sent_total\{/)).toEqual([123_456]);
    expect(sample(end, /^respbench_running\{/)).toEqual([0]);
  });

  it('keeps counting across the runs of a session (a suite, a search), per command', () => {
    const m = new LiveMetrics();
    const set = planOf(['--mode', 'set']);
    const get = planOf(['--mode', 'get']);
    m.startRun(set, 'js');
    m.addInterval(interval(0, { gets: 0, requests: 150, getHistogram: h([]) }));
    m.endRun(finishResult(set, rawResult({ requests: 150, sets: 150, gets: 0, setHistogram: h([[100_000, 150]]), getHistogram: h([]), bytesOut: 10_000 })));
    m.startRun(get, 'js');
    m.endRun(finishResult(get, rawResult({ requests: 400, sets: 0, gets: 400, misses: 40, setHistogram: h([]), getHistogram: h([[200_000, 400]]), bytesOut: 5_000 })));
    const text = render(m, 'prometheus');
    expect(sample(text, /^respbench_requests_total\{.*command="SET",outcome="ok"\}/)).toEqual([150]);
    expect(sample(text, /^respbench_requests_total\{.*command="GET",outcome="ok"\}/)).toEqual([360]);
    expect(sample(text, /^respbench_requests_total\{.*command="GET",outcome="miss"\}/)).toEqual([40]);
    expect(sample(text, /^respbench_bytes_sent_total\{/)).toEqual([15_000]);
  });

  it('splits outcomes so they add up to the requests, and says "all" for a run of several commands', () => {
    expect(outcomesOf({ requests: 100, errors: 3, misses: 5, mismatches: 2, lostWrites: 1, lost: 7 })).toEqual({ ok: 89, error: 3, miss: 5, mismatch: 2, lost_write: 1, lost: 7 });
    const m = new LiveMetrics();
    const plan = planOf(['--mode', 'mixed']);
    m.startRun(plan, 'js');
    m.addInterval(interval(0, { errors: 2 }));
    const text = render(m, 'prometheus');
    expect(sample(text, /^respbench_requests_total\{.*command="all",outcome="ok"\}/)).toEqual([298]);
    expect(sample(text, /^respbench_requests_total\{.*command="all",outcome="error"\}/)).toEqual([2]);
    expect(sample(text, /^respbench_request_duration_seconds_count\{.*command="GET"\}/)).toEqual([150]);
  });

  it('folds HDR buckets into the classic ones at their lowest equivalent value', () => {
    const f = foldDurations(h([[24_000, 1], [25_000, 2], [25_100, 4], [20_000_000_000, 8]]));
    expect(f.counts[0]).toBe(3);
    expect(f.counts[1]).toBe(4);
    expect(f.counts[f.counts.length - 1]).toBe(8);
    expect(f.sumSeconds).toBeCloseTo(160.000_174_4, 6);
  });
});

describe('exposition', () => {
  const m = new LiveMetrics();
  const plan = planOf(['--mode', 'set', '--rate', '1000', '-h', 'db"1\\x']);
  m.startRun(plan, 'native');
  m.addInterval(interval(0, { gets: 0, requests: 150, getHistogram: h([]) }));

  it('escapes label values and ends OpenMetrics with # EOF, counters named without _total in TYPE', () => {
    const om = render(m, 'openmetrics');
    expect(om).toContain('target="db\\"1\\\\x:6379"');
    expect(om).toContain('# TYPE respbench_requests counter');
    expect(om).toContain('# UNIT respbench_request_duration_seconds seconds');
    expect(om.endsWith('# EOF\n')).toBe(true);
    const text = render(m, 'prometheus');
    expect(text).toContain('# TYPE respbench_requests_total counter');
    expect(text).not.toContain('# EOF');
    expect(sample(text, /^respbench_target_rate\{/)).toEqual([1000]);
  });

  const promtool = spawnSync('sh', ['-c', 'command -v promtool']).status === 0;
  it.skipIf(!promtool)("passes promtool's check of the text format", () => {
    const r = spawnSync('promtool', ['check', 'metrics'], { input: render(m, 'prometheus'), encoding: 'utf8' });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe('statsd lines', () => {
  it('carry what the interval added, per outcome and command, and pack into datagrams under the MTU', () => {
    const lines = statsdLines('bench', { labels: {}, command: 'SET', outcomes: { ok: 5, error: 1, miss: 0, mismatch: 0, lost_write: 0, lost: 0 }, bytesOut: 10, bytesIn: 0, perCommand: [{ command: 'GET#2', data: h([[1_000_000, 3]]) }], connections: 2 }, 0.5);
    expect(lines).toContain('bench.requests.ok:5|c');
    expect(lines).toContain('bench.requests.error:1|c');
    expect(lines.some((l) => l.startsWith('bench.requests.miss'))).toBe(false);
    expect(lines).toContain('bench.command.GET_2.requests:3|c');
    expect(lines).toContain('bench.command.GET_2.ops_per_sec:6|g');
    expect(lines).toContain('bench.connections:2|g');
    const many = Array.from({ length: 200 }, (_, i) => `bench.command.C${i}.requests:1|c`);
    const ps = packets(many);
    expect(ps.length).toBeGreaterThan(1);
    for (const p of ps) expect(p.length).toBeLessThanOrEqual(1432);
    expect(ps.flatMap((p) => p.toString().split('\n'))).toEqual(many);
  });
});
