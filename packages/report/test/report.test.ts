import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  detailCsv,
  htmlReport,
  markdownReport,
  markdownTable,
  stats,
  summarize,
  summaryCsv,
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
    expect(lines[0]).toBe('| scenario | mode | Round1 | Round2 | Round3 | mean QPS | mean avg(us/op) | mean elapsed(s) |');
    expect(lines[1]).toBe('|---|---|---:|---:|---:|---:|---:|---:|');
    expect(lines[2]).toBe('| none (none) | set | 234761 | 247981 | 243948 | 242230.00 | 4.13 | 4.13 |');
    expect(lines[4]).toBe('| aof_always (aof_always) | set | 75968 | 78265 | 76608 | 76947.00 | 13.00 | 13.00 |');
  });

  it('gives the headers users read today with lang zh', () => {
    const s = summarize(originalToolRows(), study);
    const md = markdownReport(s, study, 'zh');
    expect(md).toContain('| 场景 | 模式 | Round1 | Round2 | Round3 | 均值QPS | 均值avg(us/op) | 均值elapsed(s) |');
    expect(md).toContain('hash_bench 3轮均值复测（2026-03-05 07:59:54）');
    expect(md).toContain('- 明细数据：results/hash_bench_detail_20260305_075954.csv');
  });

  it('writes one table per group under its title, with the baseline column when asked', () => {
    const s = summarize(originalToolRows(), { ...study, baseline: 'none' });
    const md = markdownReport(s, { ...study, baseline: 'none' });
    expect(md.match(/^### /gm)).toHaveLength(2);
    expect(md).toContain(`### ${KV}`);
    expect(md).toContain('| mean elapsed(s) | vs none |');
    expect(md).toContain('| persist_mypool (incremental, mypool) | set | 125179 | 170592 | 164976 | 153582.33 | 6.64 | 6.64 | 63.4% |');
  });

  it('marks failed rounds and escapes pipes in names', () => {
    const rows = [row('g', 'a|b', [], 'set', 1, null, { status: 'failed', error: 'x' }), row('g', 'a|b', [], 'set', 2, 1000)];
    const md = markdownTable(summarize(rows, { groups: [], modes: ['set'], rounds: 2 }));
    expect(md).toContain('| a\\|b | set | failed | 1000 | 1000.00 |');
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
