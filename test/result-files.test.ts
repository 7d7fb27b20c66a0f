/**
 * Result files (issue 22 Deliver 3, issue 20 item 13), both engines: --json
 * is one line (--json=pretty indents it), --json-file writes the same result
 * whole, the size grows with the intervals only (a 60 s run at 1 s
 * intervals well under 1 MB), and merge reads results of the previous form
 * (histograms as bucket lists: test/fixtures/result-v2-buckets.*.json,
 * written by the build before this change) beside the new one.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resultJsonText } from '../packages/cli/src/result-json.js';
import { engines } from './helpers/engines.js';
import { parseResult, REPO, runCli, useRedis } from './helpers/servers.js';

const redis = useRedis();
const dir = mkdtempSync(path.join(tmpdir(), 'respbench-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(engines())('result files, %s engine', (engine) => {
  const base = () => ['-p', String(redis.current.port), '--engine', engine, '-c', '4', '--mode', 'mixed', '-q'];

  it('--json is one line and --json-file holds the same result; size grows by the interval, a 60 s run at 1 s under 1 MB', async () => {
    const sizes: Record<number, number> = {};
    for (const seconds of [1, 3]) {
      const file = path.join(dir, `${engine}-${seconds}s.json`);
      const run = await runCli([...base(), '--duration', `${seconds}s`, '--json', '--json-file', file]);
      expect(run.code, run.stderr).toBe(0);
      const line = run.stdout.trimEnd();
      expect(line).not.toContain('\n');
      const written = readFileSync(file, 'utf8');
      expect(written.trimEnd()).toBe(line);
      const result = parseResult(written, file);
      expect(result.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0)).toBe(result.requests);
      expect(result.series.length).toBe(seconds);
      sizes[seconds] = statSync(file).size;
    }
    const perInterval = (sizes[3] - sizes[1]) / 2;
    const sixtySeconds = sizes[1] + 59 * perInterval;
    console.log(`${engine}: ${sizes[1]} B for 1 s, ${sizes[3]} B for 3 s: ${Math.round(perInterval)} B per 1 s interval, 60 s ≈ ${Math.round(sixtySeconds / 1024)} kB`);
    expect(sixtySeconds).toBeLessThan(1_000_000);
  });

  it('--json=pretty and --pretty indent it; other styles are refused naming the flag', async () => {
    for (const flags of [['--json=pretty'], ['--json', '--pretty']]) {
      const run = await runCli([...base(), '-n', '2000', ...flags]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.split('\n')[1]).toMatch(/^ {2}"/);
      expect(parseResult(run.stdout).requests).toBe(2000);
    }
    const bad = await runCli([...base(), '-n', '2000', '--json=yaml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe('respbench: --json takes =pretty or =compact (the default), got "yaml"');
  });
});

describe('reading both file forms', () => {
  it('merge adds a result of the previous form (bucket lists) to one of the new form (V2 base64)', async () => {
    const fixture = (i: number) => path.join(REPO, 'test', 'fixtures', `result-v2-buckets.${i}.json`);
    const old = JSON.parse(readFileSync(fixture(1), 'utf8'));
    const now = path.join(dir, 'fixture-1-now.json');
    writeFileSync(now, resultJsonText(old));
    expect(typeof JSON.parse(readFileSync(now, 'utf8')).histogram).toBe('string');
    const out = path.join(dir, 'merged.json');
    const merged = await runCli(['merge', fixture(0), now, '--json-file', out]);
    expect(merged.code, merged.stderr).toBe(0);
    const m = parseResult(readFileSync(out, 'utf8'), out);
    const first = JSON.parse(readFileSync(fixture(0), 'utf8'));
    expect(m.requests).toBe(first.requests + old.requests);
    expect(m.histogram.buckets.reduce((n: number, [, c]: [number, number]) => n + c, 0)).toBe(m.requests);
  });

  it('--json-file where it cannot be written is refused before the run (exit 2, the flag named)', async () => {
    const run = await runCli(['-p', String(redis.current.port), '-n', '100', '--json-file', path.join(dir, 'no', 'such', 'dir', 'r.json')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^respbench: --json-file .*r\.json: cannot write there: ENOENT/);
  });
});
