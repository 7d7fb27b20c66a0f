import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  capacityChart,
  capacityHtml,
  detailCsv,
  overTimeChart,
  percentileColumns,
  runHtml,
  seriesCsv,
  SERIES_COLUMNS,
  type SeriesPoint,
  groupLine,
  htmlReport,
  labelsFor,
  scenarioLabel,
  shortRunReason,
  markdownReport,
  markdownTable,
  stats,
  summarize,
  summaryCsv,
  unsteadyRows,
  type HistogramData,
  type LatencyUs,
  type RunRow,
  type StudyInfo,
} from '../src/index.js';

const REQUESTS = 1_000_000;
const KV = 'kvstore: RSET/RGET (persistence × allocator)';
const REDIS = 'Redis: SET/GET (persistence modes)';

function row(group: string, scenario: string, tags: string[], mode: string, round: number, ops: number | null, extra: Partial<RunRow> = {}): RunRow {
  const elapsed = ops === null ? null : REQUESTS / ops;
  return {
    group,
    scenario,
    tags,
    target: 'test',
    mode,
    round,
    status: 'ok',
    error: '',
    opsPerSec: ops,
    avgUsPerOp: elapsed === null ? null : (elapsed * 1e6) / REQUESTS,
    elapsedSec: elapsed,
    latencyUs: ops === null ? null : { p50: 400, p90: 600, p99: 900, p999: 1500, max: 3000, mean: 450 },
    answered: ops === null ? 0 : REQUESTS,
    ok: ops === null ? 0 : REQUESTS,
    errors: 0,
    misses: 0,
    mismatches: 0,
    engine: 'native',
    startedAt: '2026-03-05T07:59:54.000Z',
    flags: { requests: REQUESTS, pipeline: 128, set_cmd: 'SET', verify_get: false },
    ...extra,
  };
}

/** Three rounds from the original tool's 2026-03-05 07:59:54 tables. */
function originalToolRows(): RunRow[] {
  const rows: RunRow[] = [];
  const add = (g: string, s: string, tags: string[], mode: string, ops: number[]) => ops.forEach((o, i) => rows.push(row(g, s, tags, mode, i + 1, o)));
  add(KV, 'persist_mypool', ['incremental', 'mypool'], 'set', [125179, 170592, 164976]);
  add(KV, 'persist_mypool', ['incremental', 'mypool'], 'get', [186087, 195807, 193450]);
  add(REDIS, 'none', ['none'], 'set', [234761, 247981, 243948]);
  add(REDIS, 'none', ['none'], 'get', [247753, 284771, 275492]);
  add(REDIS, 'aof_always', ['aof_always'], 'set', [75968, 78265, 76608]);
  add(REDIS, 'aof_always', ['aof_always'], 'get', [276839, 271247, 275017]);
  return rows;
}

const study: StudyInfo = {
  name: 'hash_bench',
  startedAt: new Date(2026, 2, 5, 7, 59, 54),
  rounds: 3,
  modes: ['set', 'get'],
  groups: [
    { title: KV, scenarios: [{ name: 'persist_mypool', tags: ['incremental', 'mypool'] }] },
    { title: REDIS, scenarios: [{ name: 'none', tags: ['none'] }, { name: 'aof_always', tags: ['aof_always'] }] },
  ],
  parameters: 'requests=1000000 pipeline=128 keyspace=1000000 value-size=32',
  files: { detail: 'results/hash_bench_detail_20260305_075954.csv', summary: 'results/hash_bench_summary_20260305_075954.csv' },
};

describe('stats', () => {
  it('gives mean, sample standard deviation, min and max', () => {
    const s = stats([2, 4, 4, 4, 5, 5, 7, 9]);
    expect(s.n).toBe(8);
    expect(s.mean).toBe(5);
    expect(s.stddev).toBeCloseTo(2.138, 3);
    expect(s.min).toBe(2);
    expect(s.max).toBe(9);
  });

  it('is empty for no values and has zero spread for one', () => {
    expect(stats([])).toEqual({ n: 0, mean: null, stddev: null, min: null, max: null });
    expect(stats([3]).stddev).toBe(0);
  });
});

describe('summarize', () => {
  it('keeps the study order of groups, scenarios and modes', () => {
    const rows = originalToolRows().reverse();
    const s = summarize(rows, study);
    expect(s.map((r) => `${r.scenario}/${r.mode}`)).toEqual([
      'persist_mypool/set',
      'persist_mypool/get',
      'none/set',
      'none/get',
      'aof_always/set',
      'aof_always/get',
    ]);
    expect(s[0].label).toBe('persist_mypool (incremental, mypool)');
  });

  it("reproduces the original tool's mean QPS", () => {
    const s = summarize(originalToolRows(), study);
    expect(s[0].opsPerSec.mean!.toFixed(2)).toBe('153582.33');
    expect(s[4].opsPerSec.mean!.toFixed(2)).toBe('76947.00');
  });

  it('gives each scenario its ratio to the baseline in the same mode', () => {
    const s = summarize(originalToolRows(), { ...study, baseline: 'none' });
    const kvSet = s.find((r) => r.scenario === 'persist_mypool' && r.mode === 'set')!;
    expect(kvSet.ratioToBaseline).toBeCloseTo(153582.33 / 242230.0, 4);
    expect(s.find((r) => r.scenario === 'none' && r.mode === 'get')!.ratioToBaseline).toBe(1);
  });

  it('leaves failed rounds out of the aggregates and counts them', () => {
    const rows = originalToolRows();
    rows[1] = row(KV, 'persist_mypool', ['incremental', 'mypool'], 'set', 2, null, { status: 'failed', error: 'connection refused' });
    const s = summarize(rows, study)[0];
    expect(s.okRounds).toBe(2);
    expect(s.badRounds).toBe(1);
    expect(s.opsPerSec.mean).toBe((125179 + 164976) / 2);
    expect(s.rounds.map((r) => r.status)).toEqual(['ok', 'failed', 'ok']);
  });

  it('shows rounds not run yet as missing (an interrupted study)', () => {
    const rows = originalToolRows().filter((r) => !(r.scenario === 'aof_always' && (r.mode === 'get' || r.round === 3)));
    const s = summarize(rows, study);
    expect(s.map((r) => `${r.scenario}/${r.mode}`)).not.toContain('aof_always/get');
    const aof = s.find((r) => r.scenario === 'aof_always')!;
    expect(aof.rounds.map((r) => r.status)).toEqual(['ok', 'ok', 'missing']);
  });
});

describe('markdown', () => {
  it("lays out the original tool's table", () => {
    const s = summarize(originalToolRows(), study).filter((r) => r.group === REDIS);
    const lines = markdownTable(s).split('\n');
    expect(lines[0]).toBe('| scenario | mode | Round1 | Round2 | Round3 | mean QPS | sd QPS | CV | mean avg(us/op) | mean elapsed(s) |');
    expect(lines[1]).toBe('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    // The spread beside the mean; a tag repeating the name is not shown again.
    expect(lines[2]).toBe('| none | set | 234761 | 247981 | 243948 | 242230.00 | 6775.38 | 2.8% | 4.13 | 4.13 |');
    expect(lines[4]).toBe('| aof_always | set | 75968 | 78265 | 76608 | 76947.00 | 1185.43 | 1.5% | 13.00 | 13.00 |');
  });

  it('gives the headers users read today with lang zh', () => {
    const s = summarize(originalToolRows(), study);
    const md = markdownReport(s, study, 'zh');
    expect(md).toContain('| 场景 | 模式 | Round1 | Round2 | Round3 | 均值QPS | 标准差QPS | 变异系数 | 均值avg(us/op) | 均值elapsed(s) |');
    expect(md).toContain('hash_bench 3轮均值复测（2026-03-05 07:59:54）');
    expect(md).toContain('- 明细数据：results/hash_bench_detail_20260305_075954.csv');
  });

  it('writes one table per group under its title, with the baseline column when asked', () => {
    const s = summarize(originalToolRows(), { ...study, baseline: 'none' });
    const md = markdownReport(s, { ...study, baseline: 'none' });
    expect(md.match(/^### /gm)).toHaveLength(2);
    expect(md).toContain(`### ${KV}`);
    expect(md).toContain('| mean elapsed(s) | vs none |');
    expect(md).toContain('| persist_mypool (incremental, mypool) | set | 125179 | 170592 | 164976 | 153582.33 | 24757.76 | 16.1% | 6.64 | 6.64 | 63.4% |');
  });

  it('marks failed rounds and escapes pipes in names', () => {
    const rows = [row('g', 'a|b', [], 'set', 1, null, { status: 'failed', error: 'x' }), row('g', 'a|b', [], 'set', 2, 1000)];
    const md = markdownTable(summarize(rows, { groups: [], modes: ['set'], rounds: 2 }));
    expect(md).toContain('| a\\|b | set | failed | 1000 | 1000.00 | - |');
  });
});

describe('csv', () => {
  it('writes one detail row per run that csv-parse reads back', () => {
    const rows = originalToolRows();
    rows[0].error = 'quoted "text", with comma\nand newline';
    const parsed = parse(detailCsv(rows), { columns: true }) as Record<string, string>[];
    expect(parsed).toHaveLength(rows.length);
    expect(parsed[0].error).toBe(rows[0].error);
    expect(parsed[0].label).toBe('persist_mypool (incremental, mypool)');
    expect(parsed[0].tags).toBe('incremental, mypool');
    expect(Number(parsed[0].ops_per_sec)).toBe(125179);
    expect(parsed[0].pipeline).toBe('128');
    expect(parsed[0].verify_get).toBe('false');
  });

  it('leaves the cells of a run without figures empty', () => {
    const parsed = parse(detailCsv([row('g', 's', [], 'set', 1, null, { status: 'failed', error: 'refused' })]), { columns: true }) as Record<string, string>[];
    expect(parsed[0].ops_per_sec).toBe('');
    expect(parsed[0].status).toBe('failed');
  });

  it('writes one summary row per scenario and mode with rounds, spread and ratio', () => {
    const s = summarize(originalToolRows(), { ...study, baseline: 'none' });
    const parsed = parse(summaryCsv(s, 'none'), { columns: true }) as Record<string, string>[];
    expect(parsed).toHaveLength(6);
    const aof = parsed.find((r) => r.scenario === 'aof_always' && r.mode === 'set')!;
    expect(Number(aof.round1_ops_per_sec)).toBe(75968);
    expect(Number(aof.mean_ops_per_sec)).toBeCloseTo(76947, 3);
    expect(Number(aof.min_ops_per_sec)).toBe(75968);
    expect(Number(aof.max_ops_per_sec)).toBe(78265);
    expect(Number(aof.stddev_ops_per_sec)).toBeCloseTo(stats([75968, 78265, 76608]).stddev!, 2);
    expect(Number(aof.ratio_to_baseline)).toBeCloseTo(76947 / 242230, 5);
  });
});

describe('html', () => {
  it('is one self-contained page with a throughput and a latency chart per group', () => {
    const s = summarize(originalToolRows(), study);
    const html = htmlReport(s, study);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html.match(/<svg class="chart throughput"/g)).toHaveLength(2);
    expect(html.match(/<svg class="chart latency"/g)).toHaveLength(2);
    expect(html).not.toMatch(/<script|<link|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    expect(html).toContain('kvstore: RSET/RGET (persistence × allocator)');
  });

  it('escapes names', () => {
    const rows = [row('<g>', '<b>&', [], 'set', 1, 1000)];
    const html = htmlReport(summarize(rows, { groups: [], modes: ['set'], rounds: 1 }), { ...study, groups: [] });
    expect(html).not.toContain('<b>&');
    expect(html).toContain('&lt;b&gt;&amp;');
  });
});

/**
 * A stand-in for the CLI's LatencyHistogram: below 2048 ns every bucket is one
 * ns wide, so percentiles of merged buckets are the exact order statistics.
 */
function mergeExact(histograms: HistogramData[]): LatencyUs {
  const counts = new Map<number, number>();
  for (const h of histograms) for (const [v, c] of h.buckets) counts.set(v, (counts.get(v) ?? 0) + c);
  const buckets = [...counts.entries()].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((a, [, c]) => a + c, 0);
  const at = (p: number) => {
    const target = Math.max(1, Math.floor((p / 100) * total + 0.5));
    let seen = 0;
    for (const [v, c] of buckets) if ((seen += c) >= target) return v / 1000;
    return 0;
  };
  const mean = buckets.reduce((a, [v, c]) => a + v * c, 0) / total / 1000;
  return { p50: at(50), p90: at(90), p99: at(99), p999: at(99.9), max: buckets[buckets.length - 1][0] / 1000, mean };
}

/** A round whose requests took `fast` ns, `slowCount` of them `slow` ns. */
function latencyRound(round: number, fast: number, slow: number, slowCount: number, status: RunRow['status'] = 'ok'): RunRow {
  const h: HistogramData = { unit: 'ns', buckets: [[fast, 1000 - slowCount], [slow, slowCount]] };
  const own = mergeExact([h]);
  return row('g', 's', [], 'get', round, 100_000, { histogram: h, latencyUs: own, status });
}

describe('latency over rounds', () => {
  const info = { groups: [], modes: ['get'], rounds: 3 };

  it('takes the percentiles of the merged histograms, not the mean of the rounds', () => {
    // Round 1: 3% of requests at 1900 ns; rounds 2 and 3: none slow. The
    // rounds' p99s are 1.9, 0.1, 0.1 us (mean 0.7, a latency no request
    // had); of all 3000 requests 1% (30) are slow: the merged p99 is 0.1 us
    // and the p99.9 1.9 us.
    const rows = [latencyRound(1, 100, 1900, 30), latencyRound(2, 100, 1900, 0), latencyRound(3, 100, 1900, 0)];
    expect(rows.map((r) => r.latencyUs!.p99)).toEqual([1.9, 0.1, 0.1]);
    const [s] = summarize(rows, info, { mergeLatency: mergeExact });
    expect(s.latencyUs!.p99).toBe(0.1);
    expect(s.latencyUs!.p999).toBe(1.9);
    expect(s.latencyUs!.max).toBe(1.9);
    expect(s.latencyUs!.mean).toBeCloseTo((2970 * 0.1 + 30 * 1.9) / 3000, 9);
    // The detail CSV keeps each round's own figures.
    const detail = parse(detailCsv(rows), { columns: true }) as Record<string, string>[];
    expect(detail.map((r) => r.p99_us)).toEqual(['1.9', '0.1', '0.1']);
    const summary = parse(summaryCsv([s]), { columns: true }) as Record<string, string>[];
    expect(summary[0].p99_us).toBe('0.1');
    expect(summary[0].p999_us).toBe('1.9');
    expect(summary[0]).not.toHaveProperty('mean_p99_us');
  });

  it('per command: the SET and GET sides merged over the rounds, as the Totals (issue 14)', () => {
    const side = (fast: number, slow: number, n: number): HistogramData => ({ unit: 'ns', buckets: n > 0 ? [[fast, 500 - n], [slow, n]] : [[fast, 500]] });
    const rows = [1, 2].map((round) => {
      const setHistogram = side(100, 1900, round === 1 ? 20 : 0);
      const getHistogram = side(200, 2900, 0);
      const histogram: HistogramData = { unit: 'ns', buckets: [...setHistogram.buckets, ...getHistogram.buckets].sort((a, b) => a[0] - b[0]) };
      return row('g', 's', [], 'mixed', round, 100_000, { histogram, setHistogram, getHistogram, latencyUs: mergeExact([histogram]) });
    });
    const [s] = summarize(rows, { ...info, modes: ['mixed'] }, { mergeLatency: mergeExact });
    // 20 slow SETs of 1000 over the two rounds: 2%, so the SET side's p99 is the slow one.
    expect(s.setLatencyUs!.p99).toBe(1.9);
    expect(s.getLatencyUs!.p99).toBe(0.2);
    const summary = parse(summaryCsv([s]), { columns: true }) as Record<string, string>[];
    expect(summary[0].set_p99_us).toBe('1.9');
    expect(summary[0].get_p50_us).toBe('0.2');
    expect(summary[0].get_max_us).toBe('0.2');
    // Without per-command histograms (older rows), the columns are empty.
    const [old] = summarize([latencyRound(1, 100, 1900, 0)], info, { mergeLatency: mergeExact });
    expect((parse(summaryCsv([old]), { columns: true }) as Record<string, string>[])[0].set_p99_us).toBe('');
  });

  it('merges only the ok rounds', () => {
    const rows = [latencyRound(1, 100, 1900, 0), latencyRound(2, 100, 1900, 500, 'errors')];
    const [s] = summarize(rows, info, { mergeLatency: mergeExact });
    expect(s.latencyUs!.p99).toBe(0.1);
  });

  it("uses a single round's own percentiles, and gives none it cannot merge", () => {
    const one = summarize([latencyRound(1, 100, 1900, 30)], info)[0];
    expect(one.latencyUs!.p99).toBe(1.9);
    const two = summarize([latencyRound(1, 100, 1900, 30), latencyRound(2, 100, 1900, 0)], info)[0];
    expect(two.latencyUs).toBeNull();
  });
});

describe('short runs', () => {
  it('are runs under 1 s or under 10 × pipeline × connections replies', () => {
    const base = { elapsedSec: 2, answered: 100_000, flags: { pipeline: 32, connections: 4 } };
    expect(shortRunReason(base)).toBeNull();
    expect(shortRunReason({ ...base, elapsedSec: 0.04 })).toBe('short run: ran 40.0 ms (under 1 s)');
    expect(shortRunReason({ ...base, answered: 1279 })).toBe('short run: 1279 requests (under 10 × pipeline 32 × connections 4 = 1280)');
    expect(shortRunReason({ ...base, answered: 1280 })).toBeNull();
    expect(shortRunReason({ ...base, elapsedSec: null })).toBeNull();
  });

  it('are counted in the summary and named in the CSVs, the Markdown and the HTML', () => {
    const rows = originalToolRows();
    // A 0.04 s round: 1e6 requests would be 25M ops/s; the point is the time.
    rows[0] = row(KV, 'persist_mypool', ['incremental', 'mypool'], 'set', 1, 125179, { elapsedSec: 0.04 });
    const s = summarize(rows, study);
    expect(s[0].shortRounds).toBe(1);
    expect(s.slice(1).every((r) => r.shortRounds === 0)).toBe(true);
    const detail = parse(detailCsv(rows), { columns: true }) as Record<string, string>[];
    expect(detail[0].note).toBe('short run: ran 40.0 ms (under 1 s)');
    expect(detail[1].note).toBe('');
    const summary = parse(summaryCsv(s), { columns: true }) as Record<string, string>[];
    expect(summary[0].short_rounds).toBe('1');
    expect(summary[0].note).toBe('1 of 3 rounds too short to mean much (first: short run: ran 40.0 ms (under 1 s))');
    expect(summary[1].note).toBe('');
    const md = markdownReport(s, study);
    expect(md).toContain('- warning: 1 of 18 finished runs too short to mean much (under 1 s, or under 10 × pipeline × connections requests)');
    expect(md).toContain('> too short to mean much: persist_mypool (incremental, mypool) · set (1/3); short run: ran 40.0 ms (under 1 s)');
    expect(md.match(/too short to mean much: /g)).toHaveLength(1);
    expect(markdownReport(s, study, 'zh')).toContain('警告：18 次完成的运行中有 1 次太短');
    const html = htmlReport(s, study);
    expect(html).toContain('<li class="warn">warning: 1 of 18 finished runs too short');
    expect(html).toContain('<p class="warn">too short to mean much: persist_mypool (incremental, mypool) · set (1/3)');
  });

  it('are not warned about when every run is long enough', () => {
    const s = summarize(originalToolRows(), study);
    expect(markdownReport(s, study)).not.toContain('too short');
    expect(htmlReport(s, study)).not.toContain('too short');
  });
});

describe('what a table measured', () => {
  const t = labelsFor('en');
  const withFlags = (mode: string, flags: RunRow['flags'], extra: Partial<RunRow> = {}) =>
    row('g', 's', [], mode, 1, 1000, { flags: { pipeline: 1, ...flags }, ...extra });

  it('names the command pair and whether reads were verified, and how that went', () => {
    const info = { groups: [], modes: ['set', 'get'], rounds: 1 };
    const on = { set_cmd: 'RSET', get_cmd: 'RGET', verify_get: true };
    expect(groupLine(summarize([withFlags('set', on), withFlags('get', on)], info), t)).toBe(
      'commands: RSET/RGET · verification (--verify-get): on, every read verified',
    );
    const bad = withFlags('get', on, { status: 'mismatches', error: '3 reads did not verify' });
    expect(groupLine(summarize([withFlags('set', on), bad], info), t)).toBe('commands: RSET/RGET · verification (--verify-get): on, 1 run did not verify');
    expect(groupLine(summarize([withFlags('set', on)], info), t)).toBe('commands: RSET/RGET · verification (--verify-get): on, no reads to verify');
    const off = { set_cmd: 'SET', get_cmd: 'GET', verify_get: false };
    expect(groupLine(summarize([withFlags('get', off)], info), t)).toBe('commands: SET/GET · verification (--verify-get): off');
    expect(groupLine(summarize([withFlags('get', off)], info), labelsFor('zh'), '：')).toBe('命令：SET/GET · 读校验（--verify-get）：关闭');
  });

  it('is said under each group heading in the Markdown and the HTML', () => {
    const s = summarize(originalToolRows(), study);
    const md = markdownReport(s, study);
    expect(md).toContain(`### ${REDIS}\n\ncommands: SET · verification (--verify-get): off\n\n| scenario |`);
    expect(htmlReport(s, study)).toContain('<p class="group">commands: SET · verification (--verify-get): off</p>');
  });
});

describe('labels', () => {
  it('do not repeat a tag that is the name', () => {
    expect(scenarioLabel({ name: 'none', tags: ['none'] })).toBe('none');
    expect(scenarioLabel({ name: 'aof', tags: ['aof', 'always'] })).toBe('aof (always)');
    expect(scenarioLabel({ name: 'p', tags: ['incremental', 'mypool'] })).toBe('p (incremental, mypool)');
    const html = htmlReport(summarize(originalToolRows(), study), study);
    expect(html).not.toContain('none (none)');
    expect(html).not.toContain('aof_always (aof_always)');
  });
});

describe('the HTML page', () => {
  const s = summarize(originalToolRows(), study);
  const html = htmlReport(s, study);

  it('carries the latency percentiles in its tables', () => {
    expect(html).toContain('<th>mean QPS</th><th>sd QPS</th><th>CV</th><th>mean avg(us/op)</th><th>mean elapsed(s)</th><th>p50(us)</th><th>p99(us)</th><th>p99.9(us)</th>');
    // Every test round has p50 400, p99 900, p99.9 1500: one ok round each would give those; three unmergeable ones give '-'.
    const one = summarize(originalToolRows().filter((r) => r.round === 1), study);
    const page = htmlReport(one, study);
    expect(page).toMatch(/<td class="num">400\.00<\/td><td class="num">900\.00<\/td><td class="num">1500\.00<\/td>/);
  });

  it("puts each mean in a column of its own, not at the max whisker's end", () => {
    const means = [...html.matchAll(/<text x="([\d.]+)" y="[\d.]+" class="value mean">([\d,]+)<\/text>/g)];
    expect(means).toHaveLength(6);
    expect(new Set(means.map((m) => m[1])).size).toBe(1);
    expect(means.map((m) => m[2])).toContain('242,230');
    const whiskerEnds = [...html.matchAll(/<line x1="[\d.]+" y1="[\d.]+" x2="([\d.]+)" y2="[\d.]+" class="whisker"\/>/g)].map((m) => Number(m[1]));
    expect(Math.max(...whiskerEnds)).toBeLessThan(Number(means[0][1]));
  });

  it('links the CSV files as the caller gives them (relative, next to the page)', () => {
    const page = htmlReport(s, { ...study, files: { detail: 'hash_bench_detail_20260305_075954.csv', summary: 'hash_bench_summary_20260305_075954.csv' } });
    expect(page).toContain('<li>detail: <a href="hash_bench_detail_20260305_075954.csv">hash_bench_detail_20260305_075954.csv</a></li>');
    expect(page).toContain('<a href="hash_bench_summary_20260305_075954.csv">');
  });
});

describe('capacityChart', () => {
  it('no step yet, no capacity: an empty chart that says so, no NaN', () => {
    const svg = capacityChart({ points: [], slo: [{ name: 'p99', maxUs: 1000 }], capacity: null });
    expect(svg).toContain('no step finished');
    expect(svg).toContain('SLO p99 ≤ 1 ms');
    expect(svg).not.toMatch(/NaN|Infinity|undefined/);
    expect(svg).not.toContain('class="capacity"');
  });

  it('points in the order the load rose, met filled and failed hollow, the capacity marked', () => {
    const p = (targetRate: number, achievedRate: number, p99: number, met: boolean) => ({ targetRate, achievedRate, latencyUs: { p50: p99 / 4, p99, p999: p99 * 2 }, met });
    const svg = capacityChart({ points: [p(8000, 5000, 90_000, false), p(1000, 1000, 300, true), p(4000, 4000, 800, true)], slo: [{ name: 'p99.9', maxUs: 5000 }], capacity: 4000 });
    expect(svg).toContain('capacity 4,000/s');
    const p99 = [...svg.matchAll(/<circle class="point" data-series="p99" cx="([\d.]+)" cy="[\d.]+" r="4" fill="([^"]+)"/g)];
    expect(p99.map((m) => Number(m[1]))).toEqual([...p99.map((m) => Number(m[1]))].sort((a, b) => a - b));
    expect(p99.map((m) => m[2])).toEqual(['#e08a2c', '#e08a2c', '#fff']);
    expect(svg).not.toMatch(/NaN|Infinity|undefined/);
  });
});

/** A 1 s series of `n` intervals at 10k ops/s and 200 us p99, with a stall (no replies, then 1 s replies) at `stallAt`. */
function series(n: number, stallAt = -1): SeriesPoint[] {
  return Array.from({ length: n }, (_, i) => {
    const stalled = i === stallAt;
    const woke = i === stallAt + 1 && stallAt >= 0;
    const ops = stalled ? 2000 : woke ? 8000 : 10000;
    const lat = woke ? { p50: 150, p99: 1_000_000, max: 1_001_000 } : { p50: 100, p99: 200, max: 900 };
    return {
      time: new Date(Date.UTC(2026, 10, 30, 12, 0, i)).toISOString(),
      startSec: i,
      durationSec: 1,
      requests: ops,
      opsPerSec: ops,
      errors: 0,
      misses: 0,
      mismatches: 0,
      latencyUs: lat,
      perCommand: [
        { command: 'SET', requests: ops / 2, opsPerSec: ops / 2, latencyUs: lat },
        { command: 'GET', requests: ops / 2, opsPerSec: ops / 2, latencyUs: lat },
      ],
    };
  });
}

const points = (svg: string) => [...svg.matchAll(/<circle class="point[^"]*" data-t="([\d.]+)" data-v="([\d.e+-]+)"/g)].map((m) => ({ t: Number(m[1]), v: Number(m[2]) }));

describe('over-time charts', () => {
  it('a dot per interval, at its middle, on axes that say what they are', () => {
    const s = series(5);
    const svg = overTimeChart({ kind: 'throughput', lines: [{ name: 'ops/s', color: '#222', points: s.map((p) => ({ t: p.startSec + 0.5, v: p.opsPerSec })) }], xLabel: 'seconds', yLabel: 'ops/s per interval', ariaLabel: 'x', noData: 'none' });
    expect(points(svg).map((p) => p.t)).toEqual([0.5, 1.5, 2.5, 3.5, 4.5]);
    // A last interval a few ms over 5 s does not add a tick step: the axis ends at 5.
    const ended = overTimeChart({ kind: 'throughput', lines: [{ name: 'x', color: '#222', points: [{ t: 4.51, v: 1 }] }], xEnd: 5.02, xLabel: 's', yLabel: 'y', ariaLabel: 'x', noData: '-' });
    expect([...ended.matchAll(/class="tick" text-anchor="middle">([\d.]+)<\/text>/g)].map((m) => m[1]).pop()).toBe('5');
    expect(svg).toContain('class="axis x-axis" text-anchor="middle">seconds</text>');
    expect(svg).toContain('>ops/s per interval</text>');
    expect(svg).not.toContain('NaN');
  });

  it('no interval: an empty chart that says so, no NaN', () => {
    const svg = overTimeChart({ kind: 'latency', lines: [], xLabel: 's', yLabel: 'us', ariaLabel: 'x', noData: 'no interval recorded' });
    expect(svg).toContain('no interval recorded');
    expect(svg).not.toContain('NaN');
    expect(svg).not.toContain('Infinity');
  });

  it("one run's page: throughput and p50/p99 over time, in total and per command; a stall dips and peaks where it was", () => {
    const html = runHtml({ title: 'one run', meta: ['respbench 1.0.0 · engine js'], warnings: [], table: { header: ['command', 'requests'], rows: [['Totals', '1']], numeric: [false, true] }, series: series(6, 2), figures: 'ops/s\n1', plan: '{}' });
    const svgs = html.match(/<svg class="chart overtime (throughput|latency)"[\s\S]*?<\/svg>/g)!;
    expect(svgs).toHaveLength(2);
    const [tput, lat] = svgs;
    // Totals, SET, GET: 3 lines of 6 dots; latency p99, p50, max and p99 per command: 5 lines.
    expect(points(tput)).toHaveLength(18);
    expect(points(lat)).toHaveLength(30);
    const totals = tput.match(/<g class="series" data-name="Totals"[\s\S]*?<\/g>/)![0];
    const v = points(totals).map((p) => p.v);
    expect(v.indexOf(Math.min(...v))).toBe(2);
    const p99 = points(lat.match(/<g class="series" data-name="p99"[\s\S]*?<\/g>/)![0]).map((p) => p.v);
    expect(p99.indexOf(Math.max(...p99))).toBe(3);
    expect(lat).toContain('>1 s</text>');
  });

  it('the study page draws each ok round over time, per mode, a colour per scenario', () => {
    const rows = originalToolRows().map((r) => ({ ...r, series: series(3) }));
    const page = htmlReport(summarize(rows, study), study, 'en', rows);
    expect(page.match(/<svg class="chart overtime throughput"/g)).toHaveLength(4);
    expect(page.match(/<svg class="chart overtime latency"/g)).toHaveLength(4);
    // The Redis group, set: 2 scenarios × 3 rounds, 3 dots each.
    const redisSet = page.split('<section class="group">')[2].match(/<svg class="chart overtime throughput"[\s\S]*?<\/svg>/)![0];
    expect(redisSet.match(/<g class="series"/g)).toHaveLength(6);
    expect(points(redisSet)).toHaveLength(18);
    expect(redisSet).toContain('data-scenario="aof_always" data-target="test" data-mode="set" data-round="3"');
    // Rows without a series: no over-time charts.
    expect(htmlReport(summarize(originalToolRows(), study), study)).not.toContain('overtime');
  });
});

describe('series CSV', () => {
  it('a row per interval per run, stable columns; runs without a series have none', () => {
    const rows = [row(REDIS, 'none', ['none'], 'set', 1, 1000, { series: series(4) }), row(REDIS, 'none', ['none'], 'set', 2, null, { status: 'failed', series: null }), row(REDIS, 'none', ['none'], 'get', 1, 1000, { series: series(2) })];
    const text = seriesCsv(rows);
    const parsed = parse(text, { columns: true }) as Record<string, string>[];
    expect(Object.keys(parsed[0])).toEqual([...SERIES_COLUMNS]);
    expect(parsed).toHaveLength(6);
    expect(parsed.map((r) => `${r.mode}${r.round}:${r.interval}`)).toEqual(['set1:0', 'set1:1', 'set1:2', 'set1:3', 'get1:0', 'get1:1']);
    expect(parsed[1]).toMatchObject({ t_s: '1', ops_per_sec: '10000', p99_us: '200', time: '2026-11-30T12:00:01.000Z' });
    // Appended rows: no header.
    expect(seriesCsv(rows.slice(2), false).split('\n')[0]).toMatch(/^Redis/);
  });
});

describe('one page scaffolding', () => {
  it("the capacity page and the study page share the page's style and table", () => {
    const cap = capacityHtml({ title: 't', meta: ['m'], answer: 'a', notes: [], chart: { points: [], slo: [{ name: 'p99', maxUs: 1000 }], capacity: null }, table: { header: ['step', 'met'], rows: [['1', 'no']], numeric: [true, false], bad: (_i, j) => j === 1 } });
    expect(cap).toContain('<td class="num">1</td><td class="bad">no</td>');
    const study = htmlReport(summarize(originalToolRows(), { ...studyInfo() }), studyInfo());
    const style = (p: string) => p.match(/<style>[\s\S]*?<\/style>/)![0];
    expect(style(cap)).toBe(style(study));
  });
});

function studyInfo(): StudyInfo {
  return study;
}
describe('rounds that disagree (coefficient of variation)', () => {
  it('is sd / mean per scenario, in the summary, the CSV and the table; none for one round', () => {
    const s = summarize(originalToolRows(), study);
    const mypool = s.find((r) => r.scenario === 'persist_mypool' && r.mode === 'set')!;
    expect(mypool.cvOpsPerSec).toBeCloseTo(mypool.opsPerSec.stddev! / mypool.opsPerSec.mean!, 12);
    const csv = parse(summaryCsv(s), { columns: true }) as Record<string, string>[];
    expect(Number(csv.find((r) => r.scenario === 'persist_mypool' && r.mode === 'set')!.cv_ops_per_sec)).toBeCloseTo(0.1612, 4);
    const one = summarize(originalToolRows().filter((r) => r.round === 1), study);
    expect(one.every((r) => r.cvOpsPerSec === null)).toBe(true);
    expect(markdownTable(one).split('\n')[2]).toMatch(/\| - \| - \|/);
  });

  it('warns in the preamble above the threshold (default 10%), naming the rows, and suggests more rounds or pinning', () => {
    const s = summarize(originalToolRows(), study);
    const md = markdownReport(s, study);
    const warning = md.split('\n').find((l) => l.includes('rounds disagree'))!;
    expect(warning).toContain('above 10.0%');
    expect(warning).toContain('persist_mypool (incremental, mypool) · set (16.1%)');
    expect(warning).not.toContain('none · set');
    expect(warning).toMatch(/more rounds.*--cpus/);
    expect(htmlReport(s, study)).toContain('rounds disagree');
    // A study's own threshold: 20% silences it; 2% names the 2.8% row too.
    expect(markdownReport(s, { ...study, cvWarn: 0.2 })).not.toContain('rounds disagree');
    expect(markdownReport(s, { ...study, cvWarn: 0.02 })).toContain('none · set (2.8%)');
    expect(unsteadyRows(s, 0.1).map((r) => `${r.scenario} ${r.mode}`)).toEqual(['persist_mypool set']);
  });
});

describe('a capacity study', () => {
  const search = (capacity: number) => ({
    slo: 'p99 ≤ 1 ms',
    bounds: [{ name: 'p99', maxUs: 1000 }],
    capacity,
    end: 'converged',
    steps: [
      { targetRate: capacity, achievedRate: capacity, latencyUs: { p50: 100, p99: 800, p999: 1200 }, met: true },
      { targetRate: capacity * 2, achievedRate: capacity * 1.5, latencyUs: { p50: 900, p99: 5000, p999: 9000 }, met: false },
    ],
    limit: null,
  });
  const capRow = (scenario: string, round: number, ops: number): RunRow => ({
    ...row('g', scenario, [], 'set', round, ops),
    avgUsPerOp: null,
    elapsedSec: null,
    latencyUs: null,
    capacity: search(ops),
  });
  const rows = [capRow('kvstore', 1, 4000), capRow('kvstore', 2, 6000), capRow('redis', 1, 2500), capRow('redis', 2, 2500)];
  const study: StudyInfo = {
    name: 'cap',
    startedAt: new Date(2026, 0, 1),
    rounds: 2,
    modes: ['set'],
    groups: [{ title: 'g', scenarios: [{ name: 'kvstore', tags: [] }, { name: 'redis', tags: [] }] }],
    baseline: 'redis',
    capacity: { slo: 'p99 ≤ 1 ms' },
  };
  const summaries = summarize(rows, study);

  it('reads "X reaches N ops/s at the SLO, Y M" with the rounds, mean, spread and the ratio to the baseline', () => {
    const md = markdownReport(summaries, study);
    expect(md).toContain('- set: kvstore reaches 5000 ± 1414 ops/s at p99 ≤ 1 ms (200.0% of redis), redis 2500');
    expect(md).toContain('| kvstore | set | 4000 | 6000 | 5000.00 | 1414.21 | 4000 | 6000 | 200.0% |');
    expect(md).not.toContain('mean QPS');
    const csv = parse(summaryCsv(summaries, 'redis'), { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => [r.scenario, r.mean_ops_per_sec, r.ratio_to_baseline, r.slo])).toEqual([
      ['kvstore', '5000', '2', 'p99 ≤ 1 ms'],
      ['redis', '2500', '1', 'p99 ≤ 1 ms'],
    ]);
  });

  it('draws each target\'s last search in the HTML', () => {
    const html = htmlReport(summaries, study);
    expect(html.match(/<svg class="chart capacity"/g)).toHaveLength(2);
    expect(html).toContain('kvstore · set: latency against throughput (round 2)');
    expect(html).toContain('capacity 6,000/s');
  });
});

/** mergeExact's order statistics at any percentiles, keyed as the CLI's percentilesUs (`p50`, `p99.99`). */
function mergeExactAt(histograms: HistogramData[], percentiles: readonly number[]): Record<string, number> {
  const counts = new Map<number, number>();
  for (const h of histograms) for (const [v, c] of h.buckets) counts.set(v, (counts.get(v) ?? 0) + c);
  const buckets = [...counts.entries()].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((a, [, c]) => a + c, 0);
  const out: Record<string, number> = {};
  for (const p of percentiles) {
    const target = Math.max(1, Math.floor((p / 100) * total + 0.5));
    let seen = 0;
    out[`p${p}`] = 0;
    for (const [v, c] of buckets) {
      if ((seen += c) >= target) {
        out[`p${p}`] = v / 1000;
        break;
      }
    }
  }
  return out;
}

describe('chosen percentiles (--percentiles, issue 14)', () => {
  const info: StudyInfo = { ...study, groups: [{ title: 'g', scenarios: [{ name: 's', tags: [] }] }], modes: ['get'], rounds: 2, percentiles: [50, 99.99] };
  // 10000 requests a round; round 1 has 2 at 1900 ns: 0.01% of both rounds, the p99.99.
  const round = (n: number, slow: number) => {
    const h: HistogramData = { unit: 'ns', buckets: slow > 0 ? [[100, 10_000 - slow], [1900, slow]] : [[100, 10_000]] };
    return row('g', 's', [], 'get', n, 100_000, { histogram: h, getHistogram: h, setHistogram: { unit: 'ns', buckets: [] }, latencyUs: mergeExact([h]), percentilesUs: mergeExactAt([h], [50, 99.99]) });
  };
  const rows = [round(1, 4), round(2, 0)];
  const options = { mergeLatency: mergeExact, mergePercentiles: mergeExactAt, percentiles: info.percentiles };

  it('are the summary CSV columns, for the Totals and each side, from the merged histograms', () => {
    const [s] = summarize(rows, info, options);
    expect(s.percentilesUs).toEqual({ p50: 0.1, 'p99.99': 1.9 });
    const text = summaryCsv([s], undefined, info.percentiles);
    const header = text.split('\n')[0].split(',');
    expect(header).toEqual(expect.arrayContaining(['p50_us', 'p9999_us', 'max_us', 'mean_latency_us', 'set_p50_us', 'set_p9999_us', 'get_p9999_us', 'get_max_us']));
    expect(header).not.toContain('p90_us');
    expect(header).not.toContain('p999_us');
    const [r] = parse(text, { columns: true }) as Record<string, string>[];
    expect(r.p9999_us).toBe('1.9');
    expect(r.get_p9999_us).toBe('1.9');
    // The SET side sent nothing: empty, not zero.
    expect(r.set_p9999_us).toBe('');
  });

  it("are the detail CSV's columns, each run's own", () => {
    const detail = parse(detailCsv(rows, info.percentiles), { columns: true }) as Record<string, string>[];
    expect(detail.map((d) => d.p9999_us)).toEqual(['1.9', '0.1']);
    expect(detail[0]).not.toHaveProperty('p90_us');
  });

  it('are latency columns of the Markdown and HTML tables', () => {
    const s = summarize(rows, info, options);
    const md = markdownReport(s, info);
    expect(md).toContain('| mean elapsed(s) | p50(us) | p99.99(us) |');
    expect(md).toMatch(/\| 0\.10 \| 1\.90 \|\n/);
    const html = htmlReport(s, info);
    expect(html).toContain('p99.99(us)');
    expect(html).not.toContain('p99.9(us)');
  });

  it('leave every column as it was when none are chosen', () => {
    const plain = { ...info, percentiles: undefined };
    const s = summarize(rows, plain, { mergeLatency: mergeExact });
    expect(s[0].percentilesUs).toBeUndefined();
    const header = summaryCsv(s).split('\n')[0];
    expect(header).toContain('mean_elapsed_s,p50_us,p90_us,p99_us,p999_us,max_us,mean_latency_us,short_rounds,set_p50_us,set_p90_us,set_p99_us,set_p999_us,set_max_us,get_p50_us');
    expect(header).not.toContain('command');
    expect(detailCsv(rows).split('\n')[0]).toContain('elapsed_s,p50_us,p90_us,p99_us,p999_us,max_us,mean_latency_us,answered');
    expect(markdownReport(s, plain)).not.toContain('p50(us)');
    expect(htmlReport(s, plain)).toContain('p99.9(us)');
  });

  it('keep their dots in CSV names that would collide', () => {
    expect(percentileColumns([50, 99.9, 99.99])).toEqual(['p50_us', 'p999_us', 'p9999_us']);
    expect(percentileColumns([9.95, 99.5])).toEqual(['p9.95_us', 'p99.5_us']);
  });
});

describe("a command mix's per-command rows (issue 14)", () => {
  const info: StudyInfo = { ...study, groups: [{ title: 'g', scenarios: [{ name: 'mix', tags: [] }] }], modes: ['mixed'], rounds: 2 };
  // Per round: 750 GETs at 100 ns, 250 SETs at 300 ns (round 2: 240 and 10 at 2000 ns).
  const round = (n: number) => {
    const get: HistogramData = { unit: 'ns', buckets: [[100, 750]] };
    const set: HistogramData = { unit: 'ns', buckets: n === 1 ? [[300, 250]] : [[300, 240], [2000, 10]] };
    const histogram: HistogramData = { unit: 'ns', buckets: [...get.buckets, ...set.buckets] };
    return row('g', 'mix', [], 'mixed', n, 1000, {
      answered: 1000,
      elapsedSec: n === 1 ? 1 : 2,
      histogram,
      latencyUs: mergeExact([histogram]),
      commandHistograms: [
        { command: 'GET', histogram: get },
        { command: 'SET', histogram: set },
      ],
      flags: { commands: JSON.stringify([{ template: 'GET __key__', weight: 3 }, { template: 'SET', weight: 1 }]) },
    });
  };
  const rows = [round(1), round(2)];

  it('add up to the Totals: requests per command, merged latency per command', () => {
    const [s] = summarize(rows, info, { mergeLatency: mergeExact });
    expect(s.perCommand!.map((c) => c.command)).toEqual(['GET', 'SET']);
    expect(s.perCommand!.map((c) => c.requests)).toEqual([1500, 500]);
    expect(s.perCommand!.reduce((a, c) => a + c.requests, 0)).toBe(s.requests);
    // GET: 750 in 1 s, then 750 in 2 s.
    expect(s.perCommand![0].rounds).toEqual([750, 375]);
    expect(s.perCommand![1].latencyUs!.max).toBe(2);
    expect(s.perCommand![1].latencyUs!.p99).toBe(2);
    expect(s.perCommand![0].latencyUs!.max).toBe(0.1);
  });

  it('are rows of the summary CSV under their Totals, with command and requests columns', () => {
    const s = summarize(rows, info, { mergeLatency: mergeExact });
    const csv = parse(summaryCsv(s), { columns: true }) as Record<string, string>[];
    expect(csv.map((r) => r.command)).toEqual(['Totals', 'GET', 'SET']);
    expect(csv.map((r) => Number(r.requests))).toEqual([2000, 1500, 500]);
    expect(Number(csv[1].requests) + Number(csv[2].requests)).toBe(Number(csv[0].requests));
    expect(csv[1].round1_ops_per_sec).toBe('750');
    expect(csv[2].max_us).toBe('2');
    // A command is one side already: its set_/get_ cells are empty.
    expect(csv[2].set_max_us).toBe('');
  });

  it('are a small table under the group in Markdown and HTML', () => {
    const s = summarize(rows, info, { mergeLatency: mergeExact });
    const md = markdownReport(s, info);
    expect(md).toContain('| scenario | mode | command | requests | mean QPS | p50(us) | p99(us) | p99.9(us) | max(us) |');
    expect(md).toContain('| mix | mixed | GET | 1500 |');
    expect(md).toContain('| mix | mixed | SET | 500 |');
    expect(md).toContain('| mix | mixed | Totals | 2000 |');
    expect(htmlReport(s, info)).toContain('<h3>per command');
    // Zh headers too.
    expect(markdownReport(s, info, 'zh')).toContain('| 场景 | 模式 | 命令 | 请求数 |');
  });

  it('are absent without a mix: the summary keeps its columns', () => {
    const s = summarize(originalToolRows(), study, { mergeLatency: mergeExact });
    expect(s.every((r) => r.perCommand!.length === 0)).toBe(true);
    expect(summaryCsv(s).split('\n')[0]).not.toMatch(/command|requests/);
    expect(markdownReport(s, study)).not.toContain('per command');
  });
});
