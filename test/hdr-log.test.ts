/**
 * --hdr-log (issue 14): the HdrHistogram interval logs decode, with Python's
 * `hdrhistogram` package (an implementation independent of the writer), to
 * the counts and percentiles of the run's --json, in both engines and for
 * `respbench merge --hdr-log`.
 *
 * The decoder: $RESPBENCH_HDRH_PYTHON (what .ci/run installs it into), else
 * python3. Without it the test skips, except under CI=true, where it fails
 * saying so.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engines } from './helpers/engines.js';
import { REPO, runCli, runJson, useRedis } from './helpers/servers.js';

const PYTHON = process.env.RESPBENCH_HDRH_PYTHON || 'python3';
const DECODER = path.join(REPO, 'test', 'helpers', 'hdr_decode.py');
const hasHdrh = spawnSync(PYTHON, ['-c', 'import hdrh.log, hdrh.histogram'], { encoding: 'utf8' }).status === 0;
const PERCENTILES = [50, 90, 99, 99.9];

interface Decoded {
  start: number;
  end: number;
  total: number;
  max: number;
  percentiles: Record<string, number>;
}

function decode(files: string[]): Record<string, Decoded[]> {
  const r = spawnSync(PYTHON, [DECODER, PERCENTILES.join(','), ...files], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`hdr_decode.py failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * Equal within the histogram's precision: 3 significant digits, so one
 * bucket is at most 1/1024 of its value wide (the two implementations round
 * p/100 × total each their own way, which may land one bucket apart).
 */
function expectSameBucket(decodedUs: number, jsonUs: number, what: string): void {
  expect(Math.abs(decodedUs - jsonUs), `${what}: decoded ${decodedUs} us, --json ${jsonUs} us`).toBeLessThanOrEqual(Math.max(jsonUs / 1000, 0.001) + 1e-9);
}

/** The files of one result decode to its perCommand rows: counts, percentiles, and the intervals add up to the whole. */
function expectLogsMatch(prefix: string, result: any): void {
  const rows: any[] = result.perCommand;
  expect(rows.map((r) => r.command)).toEqual(['SET', 'GET', 'Totals']);
  const files = rows.flatMap((r) => [`${prefix}.${r.command}.hlog`, `${prefix}.${r.command}.run.hlog`]);
  const decoded = decode(files);
  for (const row of rows) {
    const [whole] = decoded[`${prefix}.${row.command}.run.hlog`];
    expect(whole.total).toBe(row.requests);
    for (const p of PERCENTILES) expectSameBucket(whole.percentiles[String(p)] / 1000, row.percentilesUs[`p${p}`], `${row.command} p${p}`);
    expectSameBucket(whole.max / 1000, row.latencyUs.max, `${row.command} max`);
    // The whole run starts at the measured phase's start, by the load machine's clock (the log keeps ms).
    expect(Math.abs(whole.start - result.startedUnixMs)).toBeLessThan(1.5);
    const intervals = decoded[`${prefix}.${row.command}.hlog`];
    expect(intervals.length).toBe(result.series.length);
    expect(intervals.reduce((n, i) => n + i.total, 0)).toBe(row.requests);
    if (row.command === 'Totals') {
      expect(intervals.map((i) => i.total)).toEqual(result.series.map((e: any) => e.requests));
      intervals.forEach((i, n) => expectSameBucket(i.percentiles['99'] / 1000, result.series[n].latencyUs.p99, `interval ${n} p99`));
    }
  }
  // The header says what the values are.
  expect(readFileSync(`${prefix}.Totals.hlog`, 'utf8')).toMatch(/values: latency in nanoseconds/);
}

describe('--hdr-log', () => {
  if (!hasHdrh) {
    if (process.env.CI === 'true') {
      it('has its decoder', () => {
        throw new Error(`Python's hdrhistogram package (import hdrh) is not importable by ${PYTHON}: .ci/run installs it and sets RESPBENCH_HDRH_PYTHON; the --hdr-log files cannot be checked without it`);
      });
    } else {
      it.skip(`decodes with Python's hdrhistogram (not importable by ${PYTHON}: pip install hdrhistogram)`, () => undefined);
    }
    return;
  }
  const redis = useRedis();
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-hdr-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(engines())('engine %s: the logs decode to the --json counts and percentiles, per command and interval', async (engine) => {
    const prefix = path.join(dir, engine);
    const { run, result } = await runJson(['--engine', engine, '-p', String(redis.current.port), '--mode', 'mixed', '-n', '20000', '-c', '2', '-P', '8', '-r', '1000', '--seed', '7', '--interval', '100ms', '-q', '--hdr-log', prefix]);
    expect(run.code, run.stderr).toBe(0);
    expectLogsMatch(prefix, result);
  });

  it('merge --hdr-log writes the merged run\'s logs', async () => {
    const files: string[] = [];
    for (const i of [0, 1]) {
      const { run, result } = await runJson(['--engine', 'js', '-p', String(redis.current.port), '-n', '6000', '-c', '1', '-P', '8', '-r', '1000', '--seed', '7', '--client-index', String(i), '--client-count', '2', '-q']);
      expect(run.code, run.stderr).toBe(0);
      const f = path.join(dir, `share-${i}.json`);
      writeFileSync(f, JSON.stringify(result));
      files.push(f);
    }
    const prefix = path.join(dir, 'merged');
    const merged = await runCli(['merge', ...files, '--json', '--hdr-log', prefix]);
    expect(merged.code, merged.stderr).toBe(0);
    const result = JSON.parse(merged.stdout);
    expect(result.requests).toBe(6000);
    expectLogsMatch(prefix, result);
  });
});

describe('--hdr-log, where it writes nothing', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'respbench-hdr-none-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a prefix in a folder that is not there, naming the flag, before any run', async () => {
    const r = await runCli(['-p', '1', '--hdr-log', path.join(dir, 'nope', 'x')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--hdr-log .*cannot write files in/);
  });

  it('a run that measured nothing (refused) writes no logs and says so', async () => {
    const r = await runCli(['-p', '1', '-n', '10', '-q', '--json', '--hdr-log', path.join(dir, 'x')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--hdr-log: the run measured nothing, no log files written/);
    expect(readdirSync(dir)).toEqual([]);
  });
});
