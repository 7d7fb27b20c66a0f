/**
 * Results people keep (issue 14): latency per command and the time series,
 * in both engines, against a real redis-server.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needChromium, renderPage } from './helpers/chromium.js';
import { engines } from './helpers/engines.js';
import { CLI, parseResult, runCli, runJson, startRedis, type CliRun, type RedisServer } from './helpers/servers.js';

interface Entry {
  time: string;
  startSec: number;
  durationSec: number;
  requests: number;
  opsPerSec: number;
  errors: number;
  latencyUs: { p50: number; p99: number; max: number };
  perCommand: { command: string; requests: number }[];
}

/**
 * Runs the CLI with --json --interval and calls `onLine` (once) when the
 * first live interval line comes on stderr, i.e. about one interval into
 * the measured phase.
 */
function runWatching(args: string[], onLine: () => void): Promise<CliRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let called = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => {
      stderr += d;
      if (!called && /ops\/s/.test(stderr)) {
        called = true;
        onLine();
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
  });
}

type Buckets = { buckets: [number, number][] };

/** This file's output folder: the --html pages and their screenshot. */
const out = mkdtempSync(path.join(tmpdir(), 'respbench-series-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));
/** The page a run below wrote, for the Chromium test at the end (merge's is the same page: its structure is checked from the file). */
const pages: { run?: string } = {};

/** An over-time chart of a page, by kind. */
function chart(html: string, kind: 'throughput' | 'latency'): string {
  const m = html.match(new RegExp(`<svg class="chart overtime ${kind}"[\\s\\S]*?</svg>`, 'g'));
  expect(m, `one ${kind} chart`).toHaveLength(1);
  return m![0];
}

/** The dots of one line of a chart (the <g class="series"> whose data-* match), as [t, v]. */
function line(svg: string, data: Record<string, string>): { t: number; v: number }[] {
  const groups = svg.match(/<g class="series"[^>]*>[\s\S]*?<\/g>/g) ?? [];
  const g = groups.find((x) => Object.entries(data).every(([k, v]) => x.slice(0, x.indexOf('>')).includes(` data-${k}="${v}"`)));
  expect(g, `a line with ${JSON.stringify(data)}`).toBeDefined();
  return [...g!.matchAll(/<circle class="point[^"]*" data-t="([\d.]+)" data-v="([\d.e+-]+)"/g)].map((m) => ({ t: Number(m[1]), v: Number(m[2]) }));
}
const countOf = (h: Buckets) => h.buckets.reduce((n, [, c]) => n + c, 0);

describe.each(engines())('engine %s', (engineName) => {
  const engine = ['--engine', engineName];
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('per-command rows (SET, GET, Totals) add up to the totals, in JSON and the human table', async () => {
    redis.cli('FLUSHALL');
    const args = [...engine, '--port', String(redis.port), '--mode', 'mixed', '--requests', '20000', '-c', '4', '--pipeline', '16', '--keyspace', '1000', '--seed', '5'];
    const { run, result } = await runJson(args);
    expect(run.code).toBe(0);
    expect(result.perCommand.map((r: { command: string }) => r.command)).toEqual(['SET', 'GET', 'Totals']);
    const [set, get, totals] = result.perCommand;
    expect(set.requests).toBe(result.sets);
    expect(get.requests).toBe(result.gets);
    expect(set.requests + get.requests).toBe(totals.requests);
    expect(totals.requests).toBe(20000);
    expect(set.opsPerSec + get.opsPerSec).toBeCloseTo(totals.opsPerSec, 6);
    expect(totals.latencyUs).toEqual(result.latencyUs);
    // The histograms themselves: bucket for bucket, SET + GET = the total.
    expect(countOf(result.setHistogram)).toBe(result.sets);
    expect(countOf(result.getHistogram)).toBe(result.gets);
    const sum = new Map<number, number>();
    for (const h of [result.setHistogram, result.getHistogram]) for (const [v, c] of h.buckets as [number, number][]) sum.set(v, (sum.get(v) ?? 0) + c);
    expect([...sum.entries()].sort((a, b) => a[0] - b[0])).toEqual(result.histogram.buckets);
    const human = await runCli(args);
    expect(human.code).toBe(0);
    const rows = human.stdout.split('\n').filter((l) => /^(SET|GET|Totals)\s/.test(l));
    expect(rows.map((l) => l.split(/\s+/)[0])).toEqual(['SET', 'GET', 'Totals']);
    const requests = rows.map((l) => Number(l.split(/\s+/)[1]));
    expect(requests[0] + requests[1]).toBe(requests[2]);
  });

  it('a 3 s run at 1 s has 3 intervals, stamped by the wall clock, adding up to the run', async () => {
    redis.cli('FLUSHALL');
    const before = Date.now();
    const { run, result } = await runJson([...engine, '--port', String(redis.port), '--duration', '3s', '-c', '2', '--pipeline', '8', '--keyspace', '1000']);
    expect(run.code).toBe(0);
    const series = result.series as Entry[];
    expect(series.length).toBeGreaterThanOrEqual(2);
    expect(series.length).toBeLessThanOrEqual(4);
    expect(series.reduce((n, e) => n + e.requests, 0)).toBe(result.requests);
    expect(series.every((e) => e.requests > 0 && e.perCommand.length === 2)).toBe(true);
    expect(series.every((e) => e.perCommand[0].requests + e.perCommand[1].requests === e.requests)).toBe(true);
    const first = Date.parse(series[0].time);
    expect(first).toBeGreaterThanOrEqual(before);
    expect(first).toBeLessThanOrEqual(Date.now());
    series.forEach((e, i) => expect(e.startSec).toBeCloseTo(i, 6));
  });

  it('--interval 500ms halves the intervals and prints a line per interval', async () => {
    redis.cli('FLUSHALL');
    const run = await runCli([...engine, '--port', String(redis.port), '--duration', '2s', '--interval', '500ms', '-c', '2', '--keyspace', '1000']);
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n').filter((l) => /^\[\d\d:\d\d:\d\d\.\d{3}Z /.test(l));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.length).toBeLessThanOrEqual(5);
    expect(lines[0]).toMatch(/ops\/s · \d+ requests · errors 0 · misses \d+ · mismatches 0 · p50 [\d.]+ · p99 [\d.]+ · max [\d.]+ us/);
  });

  it('a DEBUG SLEEP 1 stall shows in the series at the second it happened', async () => {
    redis.cli('FLUSHALL');
    let sentAt = 0;
    const html = path.join(out, `stall-${engineName}.html`);
    const run = await runWatching([...engine, '--port', String(redis.port), '--duration', '5s', '--interval', '1s', '--json', '--html', html, '-c', '2', '--pipeline', '4', '--keyspace', '1000'], () => {
      // About 1 s into the phase: stall the server from about 2.2 s to 3.2 s.
      setTimeout(() => {
        sentAt = Date.now();
        spawn('redis-cli', ['-p', String(redis.port), 'DEBUG', 'SLEEP', '1'], { stdio: 'ignore' });
      }, 1200);
    });
    expect(run.code).toBe(0);
    expect(sentAt).toBeGreaterThan(0);
    const series = JSON.parse(run.stdout).series as Entry[];
    const span = (e: Entry) => [Date.parse(e.time), Date.parse(e.time) + e.durationSec * 1000];
    // The interval the server woke in holds the second-long replies (the
    // clocks may differ by a few ms). How many replies the stalled second
    // lost is left out: on a shared machine the rate swings as much.
    const slow = series.findIndex((e) => e.latencyUs.max >= 800_000);
    expect(slow).toBeGreaterThanOrEqual(0);
    const [from, to] = span(series[slow]);
    expect(sentAt + 1000).toBeGreaterThanOrEqual(from - 100);
    expect(sentAt + 1000).toBeLessThanOrEqual(to + 100);
    expect(series[slow].latencyUs.max).toBeLessThan(1_500_000);
    // No interval before the stall saw anything like it.
    const stalledAt = series.findIndex((e) => span(e)[1] > sentAt);
    expect(series.slice(0, stalledAt).every((e) => e.latencyUs.max < 500_000)).toBe(true);

    // The --html page charts the same series: a dot per interval at its middle, the stall a dip in
    // throughput where the server slept and a peak of the slowest reply where it woke.
    const page = readFileSync(html, 'utf8');
    pages.run = html;
    const tput = chart(page, 'throughput');
    const lat = chart(page, 'latency');
    expect(tput).toContain('seconds into the measured phase</text>');
    expect(tput).toContain('ops/s per interval</text>');
    expect(lat).toContain('latency per interval (log scale)</text>');
    const ops = line(tput, { command: 'Totals' });
    expect(ops).toHaveLength(series.length);
    ops.forEach((p, i) => {
      expect(p.t).toBeCloseTo(series[i].startSec + series[i].durationSec / 2, 2);
      expect(p.v).toBeCloseTo(series[i].opsPerSec, 2);
    });
    const max = line(lat, { command: 'Totals', percentile: 'max' });
    expect(max).toHaveLength(series.length);
    expect(max.findIndex((p) => p.v >= 800_000)).toBe(slow);
    expect(line(lat, { command: 'Totals', percentile: 'p99' })).toHaveLength(series.length);
    // The intervals the server slept in lost about a second of replies between them: the lowest of
    // them is below the best interval outside the stall by a margin a busy machine keeps.
    const inStall = series.map((e) => span(e)[0] < sentAt + 1000 && span(e)[1] > sentAt);
    const during = ops.filter((_, i) => inStall[i]).map((p) => p.v);
    const outside = ops.filter((_, i) => !inStall[i] && i < series.length - 1).map((p) => p.v);
    expect(during.length).toBeGreaterThanOrEqual(1);
    expect(Math.min(...during)).toBeLessThan(0.8 * Math.max(...outside));
  });

  it('--percentiles chooses the table columns and the JSON percentiles, per command too', async () => {
    redis.cli('FLUSHALL');
    const args = [...engine, '--port', String(redis.port), '--requests', '20000', '-c', '2', '--keyspace', '1000', '--percentiles', '50,90,99,99.9,99.99'];
    const { run, result } = await runJson(args);
    expect(run.code).toBe(0);
    const keys = ['p50', 'p90', 'p99', 'p99.9', 'p99.99'];
    expect(Object.keys(result.percentilesUs)).toEqual(keys);
    expect(result.percentilesUs.p99).toBe(result.latencyUs.p99);
    expect(result.percentilesUs['p99.99']).toBeGreaterThanOrEqual(result.percentilesUs['p99.9']);
    for (const row of result.perCommand) expect(Object.keys(row.percentilesUs)).toEqual(keys);
    const human = await runCli(args);
    const head = human.stdout.split('\n').find((l) => l.trim().startsWith('ops/s'))!;
    expect(head.trim().split(/\s{2,}/)).toEqual(['ops/s', 'avg us/op', 'elapsed s', 'p50 us', 'p90 us', 'p99 us', 'p99.9 us', 'p99.99 us', 'max us']);
  });

  it('--json carries the metadata: version, engine, start, host, the command line with its secrets masked, the Plan', async () => {
    const guarded = await startRedis(['--requirepass', 'sw0rdfish']);
    try {
      const before = Date.now();
      // The URI names the port: -p beside -u is refused (one would be ignored).
      const args = [...engine, '-a', 'sw0rdfish', '--requests', '2000', '--uri', `redis://default:sw0rdfish@127.0.0.1:${guarded.port}`];
      const run = await runCli([...args, '--json']);
      expect(run.code).toBe(0);
      expect(run.stdout + run.stderr).not.toContain('sw0rdfish');
      const r = JSON.parse(run.stdout);
      expect(r.meta).toMatchObject({ tool: 'respbench', engine: engineName, commandLine: [...engine, '-a', '***', '--requests', '2000', '--uri', `redis://default:***@127.0.0.1:${guarded.port}`, '--json'] });
      expect(r.meta.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(r.meta.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(Date.parse(r.meta.startedAt)).toBeGreaterThanOrEqual(before);
      expect(r.meta.startedAt).toBe(r.series[0].time);
      expect(typeof r.meta.hostname).toBe('string');
      expect(r.plan.password).toBe('***');
      expect(r.plan.requests).toBe(2000);
    } finally {
      await guarded.stop();
    }
  });

  it('3 load machines (--client-index 0..2 --client-count 3) send exactly the traffic of one run with 3 × -c, and merge to its counters', async () => {
    const common = [...engine, '--port', String(redis.port), '--mode', 'mixed', '--set-ratio', '70', '-n', '30001', '--keyspace', '5000', '--seed', '21', '--pipeline', '16', '--value-size', '8-64'];
    redis.cli('FLUSHALL');
    const single = await runJson([...common, '-c', '6']);
    expect(single.run.code).toBe(0);
    const digest = redis.cli('DEBUG', 'DIGEST');
    redis.cli('FLUSHALL');
    const dir = mkdtempSync(path.join(tmpdir(), 'respbench-merge-'));
    try {
      const parts = await Promise.all([0, 1, 2].map((i) => runCli([...common, '-c', '2', '--client-index', String(i), '--client-count', '3', '--json'])));
      expect(parts.map((p) => p.code)).toEqual([0, 0, 0]);
      expect(redis.cli('DEBUG', 'DIGEST')).toBe(digest);
      const files = parts.map((p, i) => {
        const f = path.join(dir, `m${i}.json`);
        writeFileSync(f, p.stdout);
        return f;
      });
      const mergedHtml = path.join(out, `merged-${engineName}.html`);
      const merged = await runCli(['merge', ...files, '--json', '--html', mergedHtml]);
      expect(merged.code).toBe(0);
      const m = parseResult(merged.stdout);
      // The merged result's page: its series over time, a dot per merged interval, per command too.
      const page = readFileSync(mergedHtml, 'utf8');
      expect(page).toContain('merged from 3 results (--client-count 3)');
      expect(line(chart(page, 'throughput'), { command: 'Totals' }).map((p) => p.v)).toEqual(m.series.map((e: Entry) => Number(e.opsPerSec.toFixed(3))));
      expect(line(chart(page, 'throughput'), { command: 'SET' })).toHaveLength(m.series.length);
      expect(line(chart(page, 'latency'), { command: 'GET', percentile: 'p99' })).toHaveLength(m.series.length);
      const one = single.result;
      // Misses (and so bytes in) depend on whether a key's write came before its read: timing, not traffic.
      for (const k of ['requests', 'sets', 'gets', 'ok', 'errors', 'mismatches', 'bytesOut']) expect([k, m[k]]).toEqual([k, one[k]]);
      expect(countOf(m.histogram)).toBe(one.requests);
      expect(countOf(m.setHistogram)).toBe(one.sets);
      // The merged result is the single run's: its Plan has no share of its own.
      expect(m.plan).toMatchObject({ connections: 6, requests: 30001 });
      expect(m.plan).not.toHaveProperty('clientIndex');
      expect(m.merged.clientCount).toBe(3);
      expect(m.complete).toBe(true);
      expect(m.merged.files).toEqual(files);
      // The merged result says how it was made: the merge's command line, the earliest start, each machine's own metadata.
      const metas = parts.map((p) => JSON.parse(p.stdout).meta);
      expect(m.meta.commandLine).toEqual(['merge', ...files, '--json', '--html', mergedHtml]);
      expect(m.meta.startedAt).toBe(metas.map((x) => x.startedAt).sort()[0]);
      expect(m.meta.hostname).toBe(metas[0].hostname);
      expect(m.merged.machines.map((x: { meta: { startedAt: string } }) => x.meta.startedAt)).toEqual(metas.map((x) => x.startedAt));
      expect(page).toContain(`command line: respbench merge ${files[0]}`);
      expect(m.series.reduce((n: number, e: Entry) => n + e.requests, 0)).toBe(one.requests);
      // A run of another Plan is refused, saying which fields differ.
      const other = JSON.parse(parts[1].stdout);
      other.plan.seed = 22;
      writeFileSync(path.join(dir, 'other.json'), JSON.stringify(other));
      const refused = await runCli(['merge', files[0], path.join(dir, 'other.json')]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('ran different Plans (seed 21 vs 22): merge adds up the shares of one run (--client-index apart) only');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a command on the line names its row', async () => {
    redis.cli('FLUSHALL');
    // The command comes last on the line: every flag before it.
    const run = await runCli([...engine, '--port', String(redis.port), '-n', '2000', '-c', '2', '--json', 'LPUSH', 'mylist', 'x']);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(result.perCommand.map((r: { command: string }) => r.command)).toEqual(['LPUSH', 'Totals']);
    expect(result.perCommand[0].requests).toBe(2000);
  });
});

describe('--html', () => {
  it('is refused, before anything runs, with -t or where it cannot be written', async () => {
    const suite = await runCli(['--port', '1', '-t', 'set', '--html', path.join(out, 'x.html')]);
    expect(suite.code).toBe(2);
    expect(suite.stderr).toContain('--html charts one run: it does not go with -t/--tests');
    const nowhere = await runCli(['--port', '1', '-n', '10', '--html', path.join(out, 'no', 'such', 'dir', 'x.html')]);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toMatch(/--html .*x\.html: cannot write there: /);
    expect(nowhere.stderr).not.toMatch(/\n\s+at /);
  });

  it('the page opens in headless Chromium with its charts; its screenshot goes to the test output folder', (ctx) => {
    needChromium(ctx, 'the --html page');
    expect(pages.run, 'a run wrote an --html page above').toBeDefined();
    const shot = path.join(out, 'run.png');
    const { dom, pngBytes } = renderPage(pages.run!, shot, '1000,1600');
    expect(dom.match(/<svg class="chart overtime throughput"/g)).toHaveLength(1);
    expect(dom.match(/<svg class="chart overtime latency"/g)).toHaveLength(1);
    expect(dom).toContain('<th>command</th><th>requests</th><th>ops/s</th>');
    expect(dom).toMatch(/<li>command line: respbench .*--html /);
    expect(pngBytes).toBeGreaterThan(10_000);
    expect(existsSync(shot)).toBe(true);
  });
});
