/**
 * What `respbench compare` refuses (two results of different workloads, a
 * file that is no result: exit 2 naming the fields) and the previous result
 * form it still reads. The gates and the noise, which time a server of
 * known capacity, are compare.test.ts's.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resultJsonText } from '../packages/cli/src/result-json.js';
import { REPO, runCli, useRedis } from './helpers/servers.js';

const dir = mkdtempSync(path.join(tmpdir(), 'respbench-compare-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const redis = useRedis();

interface Figure {
  percent: number;
}

describe('compare refuses what does not compare, and reads both file forms', () => {
  it('different commands or value sizes: exit 2 naming the fields', async () => {
    const save = async (name: string, extra: string[]) => {
      const f = path.join(dir, `${name}.json`);
      expect((await runCli(['-p', String(redis.current.port), '-n', '300', '-c', '2', '-q', '--json-file', f, ...extra])).code).toBe(0);
      return f;
    };
    const set = await save('set-d3', ['--mode', 'set', '-d', '3']);
    const get = await save('get-d3', ['--mode', 'get', '-d', '3']);
    const big = await save('set-d100', ['--mode', 'set', '-d', '100']);
    const modes = await runCli(['compare', set, get]);
    expect(modes.code).toBe(2);
    expect(modes.stderr).toMatch(/^respbench: .*set-d3\.json \(BASE\) and .*get-d3\.json \(NEW\) ran different workloads \(mode "set" vs "get"; rows "SET, Totals" vs "GET, Totals"\): their figures do not compare\n$/);
    const sizes = await runCli(['compare', set, big]);
    expect(sizes.code).toBe(2);
    expect(sizes.stderr).toContain('valueSizeMin 3 vs 100; valueSizeMax 3 vs 100');
    const junk = path.join(dir, 'junk.json');
    writeFileSync(junk, '{"hello": 1}');
    const bad = await runCli(['compare', set, junk]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/junk\.json is not a result compare reads: give respbench's --json of a run/);
  });

  it('a result of the previous form (bucket lists) against its new form: every figure 100%', async () => {
    const old = path.join(REPO, 'test', 'fixtures', 'result-v2-buckets.0.json');
    const now = path.join(dir, 'fixture-0-now.json');
    writeFileSync(now, resultJsonText(JSON.parse(readFileSync(old, 'utf8'))));
    const run = await runCli(['compare', old, now, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const figures = JSON.parse(run.stdout).figures as Figure[];
    expect(figures.length).toBeGreaterThan(6);
    for (const f of figures) expect(f.percent).toBe(100);
  });
});
